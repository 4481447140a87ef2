// swift-tools-version:6.0
import PackageDescription

// accessory-sim's LD_PRELOAD shim, libaccessory-sim-preload.so (see preload.c), as a package
// of its own: the root package's `accessory-sim` links this dynamic library product, so that
// `swift build --product accessory-sim` alone builds the shim beside the simulator (a dynamic
// library product of the simulator's own package would be linked statically, or not built).
let package = Package(
    name: "AccessorySimPreload",
    products: [
        .library(name: "accessory-sim-preload", type: .dynamic, targets: ["AccessorySimPreload"]),
    ],
    targets: [
        .target(
            name: "AccessorySimPreload", path: ".", exclude: ["Package.swift"], sources: ["preload.c"],
            linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
    ]
)
