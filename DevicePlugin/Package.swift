// swift-tools-version:6.0
import PackageDescription

// The kubelet device plugin: a package of its own beside the library, so that the library,
// accessoryctl and everyone who depends on them never fetch or build gRPC.
//   swift build --package-path DevicePlugin --product accessory-device-plugin
let package = Package(
    name: "AccessoryDevicePlugin",
    products: [
        .executable(name: "accessory-device-plugin", targets: ["accessory-device-plugin"]),
        .library(name: "AccessoryFleet", targets: ["AccessoryFleet"]),
    ],
    dependencies: [
        .package(name: "AccessoryKit", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        // Which file is at a path: `statx(2)`'s birth time, which Swift's Glibc does not import.
        .target(name: "CFileIdentity"),
        // What a device plugin advertises: pure, fed with the manager's events.
        .target(name: "AccessoryFleet", dependencies: [.product(name: "AccessoryCore", package: "AccessoryKit")]),
        // The kubelet's device plugin API v1beta1: proto/api.proto and the Swift code
        // generated from it (committed; scripts/generate-kubelet-api regenerates it).
        .target(
            name: "KubeletDevicePluginAPI",
            dependencies: [
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            exclude: ["proto"]),
        .executableTarget(
            name: "accessory-device-plugin",
            dependencies: [
                "AccessoryFleet", "KubeletDevicePluginAPI", "CFileIdentity",
                .product(name: "AccessoryKit", package: "AccessoryKit"),
                .product(name: "ProcessSignals", package: "AccessoryKit"),
                .product(name: "AccessoryCore", package: "AccessoryKit"),
                .product(name: "AccessoryMetrics", package: "AccessoryKit"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "AccessoryFleetTests",
            dependencies: ["AccessoryFleet", .product(name: "AccessoryCore", package: "AccessoryKit")]),
        // The plugin driven by a fake kubelet written with the same generated code, under
        // accessory-sim; and its parts that need no kubelet, imported with @testable.
        .testTarget(
            name: "DevicePluginTests",
            dependencies: [
                "KubeletDevicePluginAPI", "AccessoryFleet", "accessory-device-plugin",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ]),
    ]
)
