// swift-tools-version:6.0
// A user's package: an app's dock logic and its tests, written only against AccessoryKit's
// public API and the AccessoryTesting contract. scripts/test-consumer builds and tests it
// against this checkout, which it places beside this folder as `AccessoryKit`.
import PackageDescription

let package = Package(
    name: "DockApp",
    dependencies: [.package(path: "../AccessoryKit")],
    targets: [
        .target(name: "DockApp", dependencies: [.product(name: "AccessoryKit", package: "AccessoryKit")]),
        .testTarget(
            name: "DockAppTests",
            dependencies: [
                "DockApp",
                .product(name: "AccessoryKit", package: "AccessoryKit"),
                .product(name: "AccessoryTesting", package: "AccessoryKit"),
            ]),
    ]
)
