// swift-tools-version:6.0
// A user's package: an app's client for a USB accessory and tests that replay a capture of
// the real conversation, written only against AccessoryKit's public API and the
// AccessoryTesting contract. scripts/test-consumer builds and tests it against this
// checkout, which it places beside this folder as `AccessoryKit`.
import PackageDescription

let package = Package(
    name: "RecordedReader",
    dependencies: [.package(path: "../AccessoryKit")],
    targets: [
        .target(name: "RecordedReader", dependencies: [.product(name: "AccessoryKit", package: "AccessoryKit")]),
        .testTarget(
            name: "RecordedReaderTests",
            dependencies: [
                "RecordedReader",
                .product(name: "AccessoryKit", package: "AccessoryKit"),
                .product(name: "AccessoryTesting", package: "AccessoryKit"),
            ]),
    ]
)
