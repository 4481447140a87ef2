print("accessoryctl")
