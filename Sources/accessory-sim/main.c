#include <umockdev.h>
int main(void) { return 0; }
