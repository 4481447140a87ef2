// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "AccessoryKit",
    // Linux only: the OS truth is sysfs, devices open through usbfs, and the simulator is
    // umockdev. (No `platforms` entry: SwiftPM has none for Linux.)
    products: [
        .library(name: "AccessoryCore", targets: ["AccessoryCore"]),
        .library(name: "AccessoryTraces", targets: ["AccessoryTraces"]),
        .library(name: "AccessoryCapture", targets: ["AccessoryCapture"]),
        .library(name: "AccessoryKit", targets: ["AccessoryKit"]),
        .library(name: "AccessoryTesting", targets: ["AccessoryTesting"]),
        .library(name: "ProcessSignals", targets: ["ProcessSignals"]),
        .library(name: "AccessoryMetrics", targets: ["AccessoryMetrics"]),
        .executable(name: "accessoryctl", targets: ["accessoryctl"]),
        .executable(name: "accessory-sim", targets: ["accessory-sim"]),
        .executable(name: "accessory-bench", targets: ["AccessoryBench"]),
        .executable(name: "accessory-example", targets: ["AccessoryExample"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // Prometheus metrics for the programs (accessoryctl watch --metrics, the device
        // plugin): swift-prometheus brings only swift-metrics and swift-atomics, no SwiftNIO.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // accessory-sim's LD_PRELOAD shim (libaccessory-sim-preload.so), loaded in front of
        // umockdev's: one uevent socket name per process (issue #16). A package of its own so
        // that building accessory-sim builds it too (see its Package.swift).
        .package(name: "AccessorySimPreload", path: "Sources/AccessorySimPreload"),
    ],
    targets: [
        // The C boundary: libusb, through pkg-config. Only AccessoryKit/LibUSB imports it.
        .systemLibrary(
            name: "CLibUSB", path: "CLibUSB", pkgConfig: "libusb-1.0",
            providers: [.apt(["libusb-1.0-0-dev"])]),
        // umockdev, for the simulator only (never linked into the library).
        .systemLibrary(
            name: "CUmockdev", path: "Sources/CUmockdev", pkgConfig: "umockdev-1.0",
            providers: [.apt(["libumockdev-dev", "libglib2.0-dev"])]),
        // Pure core: no clock, no thread, no I/O (AccessoryCoreTests checks its sources).
        .target(name: "AccessoryCore"),
        // Records: hotplug traces and the udevadm importer. Parsing is pure; files are read
        // and written at the edges. Re-exported by AccessoryKit.
        .target(name: "AccessoryTraces", dependencies: ["AccessoryCore"]),
        // Linux usbmon captures (pcap and pcapng): the streaming reader, the summary and the
        // writer. Files are read in bounded chunks. Depends only on AccessoryLocking;
        // re-exported by AccessoryKit.
        .target(name: "AccessoryCapture", dependencies: ["AccessoryLocking"]),
        // `Locked`: a value behind a pthread mutex, which ThreadSanitizer understands (Swift's
        // `Mutex` hands a contended lock over where TSan cannot see). Package-internal.
        .target(name: "AccessoryLocking"),
        // Hardware bridge: libusb backend, manager and sessions.
        .target(
            name: "AccessoryKit",
            dependencies: [
                "AccessoryCore", "AccessoryTraces", "AccessoryCapture", "AccessoryLocking", "CLibUSB",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]),
        // Simulated USB for users' tests: the real manager on an in-process host and a
        // virtual clock, and trace replay through it.
        .target(name: "AccessoryTesting", dependencies: ["AccessoryKit", "AccessoryCore", "AccessoryTraces", "AccessoryCapture", "AccessoryLocking"]),
        // SIGINT and SIGTERM for the programs (accessoryctl, the device plugin), not the library.
        .target(name: "ProcessSignals"),
        // Prometheus metrics of a manager and the small HTTP server that serves them, for the
        // programs; no library target depends on it.
        .target(
            name: "AccessoryMetrics",
            dependencies: [
                "AccessoryKit", "AccessoryCore", "AccessoryLocking",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        .executableTarget(
            name: "accessoryctl",
            dependencies: [
                "AccessoryKit", "AccessoryCore", "AccessoryTraces", "AccessoryCapture", "ProcessSignals", "AccessoryMetrics",
                "AccessoryLocking", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Virtual accessories: a umockdev testbed that runs a command under it (C).
        // It links the preload shim's dynamic library, so one `swift build --product
        // accessory-sim` gives a simulator that starts (the shim lands beside it).
        .executableTarget(
            name: "accessory-sim",
            dependencies: ["CUmockdev", .product(name: "accessory-sim-preload", package: "AccessorySimPreload")]),
        .executableTarget(
            name: "AccessoryBench",
            dependencies: ["AccessoryCore", "AccessoryTraces", "AccessoryKit", "AccessoryCapture", .product(name: "Logging", package: "swift-log")]),
        // The Getting-started example: watch, open a session, handle a disconnection.
        .executableTarget(name: "AccessoryExample", dependencies: ["AccessoryKit", "AccessoryCore"]),
        // libFuzzer targets (see scripts/fuzz). Built normally, each replays files given as
        // arguments through its entry point.
        .target(name: "FuzzSupport", path: "Sources/FuzzSupport"),
        .executableTarget(name: "FuzzTraceReader", dependencies: ["AccessoryCore", "AccessoryTraces", "FuzzSupport"]),
        .executableTarget(name: "FuzzUdevadmImporter", dependencies: ["AccessoryCore", "AccessoryTraces", "FuzzSupport"]),
        .executableTarget(name: "FuzzDescriptorParser", dependencies: ["AccessoryCore", "FuzzSupport"]),
        .executableTarget(name: "FuzzCaptureReader", dependencies: ["AccessoryCapture", "FuzzSupport"]),
        // What the test targets share: fixture paths, the ../shared conditions, and the
        // project's own replay and list checks.
        .target(name: "AccessoryTestSupport", dependencies: ["AccessoryCapture"], path: "Tests/AccessoryTestSupport"),
        .testTarget(name: "AccessoryCoreTests", dependencies: ["AccessoryCore", "AccessoryTraces", "AccessoryTestSupport"]),
        // AccessoryTraces for its SplitMix64, the property tests' seeded generator.
        .testTarget(name: "AccessoryCaptureTests", dependencies: ["AccessoryCapture", "AccessoryTraces", "AccessoryTestSupport"]),
        .testTarget(
            name: "AccessoryKitTests",
            dependencies: [
                "AccessoryKit", "AccessoryCore", "AccessoryTraces", "AccessoryLocking", "AccessoryTestSupport",
                .product(name: "DequeModule", package: "swift-collections"),
            ]),
        .testTarget(
            name: "AccessoryCtlTests",
            dependencies: ["AccessoryCore", "AccessoryTraces", "AccessoryCapture", "AccessoryKit", "AccessoryTesting", "AccessoryTestSupport"]),
        .testTarget(
            name: "AccessoryMetricsTests",
            dependencies: [
                "AccessoryMetrics", "AccessoryKit", "AccessoryCore", "AccessoryLocking", "AccessoryTesting",
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        .testTarget(name: "AccessoryExampleTests", dependencies: ["AccessoryExample", "AccessoryTesting", "AccessoryKit"]),
        .testTarget(
            name: "AccessoryTestingTests",
            dependencies: ["AccessoryTesting", "AccessoryKit", "AccessoryCore", "AccessoryTraces", "AccessoryLocking", "AccessoryTestSupport", .product(name: "Logging", package: "swift-log")]),
    ]
)
