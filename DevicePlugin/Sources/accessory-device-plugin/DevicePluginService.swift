import AccessoryFleet
import GRPCCore
import KubeletDevicePluginAPI

/// The `DevicePlugin` service a kubelet calls on the plugin's socket.
struct DevicePluginService: V1beta1_DevicePlugin.SimpleServiceProtocol {
    let board: DeviceBoard

    static let options = V1beta1_DevicePluginOptions.with {
        $0.preStartRequired = false
        $0.getPreferredAllocationAvailable = true
    }

    func getDevicePluginOptions(request: V1beta1_Empty, context: ServerContext) async throws -> V1beta1_DevicePluginOptions {
        Self.options
    }

    func listAndWatch(
        request: V1beta1_Empty, response: RPCWriter<V1beta1_ListAndWatchResponse>, context: ServerContext
    ) async throws {
        for await devices in board.watch() {
            try await response.write(.with {
                $0.devices = devices.map { device in
                    .with {
                        $0.id = device.id
                        $0.health = device.isHealthy ? "Healthy" : "Unhealthy"
                    }
                }
            })
        }
    }

    /// Prefers the devices that must be included, then the healthy ones in ID order.
    func getPreferredAllocation(
        request: V1beta1_PreferredAllocationRequest, context: ServerContext
    ) async throws -> V1beta1_PreferredAllocationResponse {
        let healthy = Set(board.healthyIDs)
        return .with {
            $0.containerResponses = request.containerRequests.map { container in
                var chosen = container.mustIncludeDeviceIds
                let rest = container.availableDeviceIds.filter { !chosen.contains($0) }.sorted {
                    (healthy.contains($0) ? 0 : 1, $0) < (healthy.contains($1) ? 0 : 1, $1)
                }
                chosen += rest.prefix(max(0, Int(container.allocationSize) - chosen.count))
                return .with { $0.deviceIds = chosen }
            }
        }
    }

    /// Each container gets its devices' current nodes (`rw`) and environment variables that
    /// name them. An unknown ID is NOT_FOUND, a disconnected one FAILED_PRECONDITION.
    func allocate(request: V1beta1_AllocateRequest, context: ServerContext) async throws -> V1beta1_AllocateResponse {
        var response = V1beta1_AllocateResponse()
        for container in request.containerRequests {
            var allocations: [DeviceInventory.Allocation] = []
            for id in container.devicesIds {
                do {
                    allocations.append(try board.allocation(for: id))
                } catch .unknown {
                    throw RPCError(code: .notFound, message: "unknown device ID \(id): no such accessory was seen by this plugin")
                } catch .unhealthy {
                    throw RPCError(code: .failedPrecondition, message: "device \(id) is not connected now (unhealthy)")
                }
            }
            response.containerResponses.append(Self.containerResponse(allocations))
        }
        return response
    }

    func preStartContainer(
        request: V1beta1_PreStartContainerRequest, context: ServerContext
    ) async throws -> V1beta1_PreStartContainerResponse {
        V1beta1_PreStartContainerResponse()
    }

    /// `ACCESSORY_DEVICE`, `ACCESSORY_DEVICE_ID`, `ACCESSORY_CONNECTION_ID`, `ACCESSORY_BUS`,
    /// `ACCESSORY_PORT` and `ACCESSORY_SERIAL` name the first device; with more than one,
    /// each also appears suffixed `_0`, `_1`, …, and `ACCESSORY_COUNT` says how many.
    static func containerResponse(_ allocations: [DeviceInventory.Allocation]) -> V1beta1_ContainerAllocateResponse {
        var container = V1beta1_ContainerAllocateResponse()
        func variables(_ a: DeviceInventory.Allocation) -> [String: String] {
            var env = [
                "ACCESSORY_DEVICE": a.devicePath, "ACCESSORY_DEVICE_ID": a.deviceID,
                "ACCESSORY_CONNECTION_ID": "\(a.connectionID.rawValue)", "ACCESSORY_BUS": "\(a.bus)",
                "ACCESSORY_PORT": a.port,
            ]
            if let serial = a.serial { env["ACCESSORY_SERIAL"] = serial }
            return env
        }
        for (i, a) in allocations.enumerated() {
            container.devices.append(.with {
                $0.containerPath = a.devicePath
                $0.hostPath = a.devicePath
                $0.permissions = "rw"
            })
            let env = variables(a)
            if i == 0 { container.envs.merge(env) { $1 } }
            if allocations.count > 1 {
                for (key, value) in env { container.envs["\(key)_\(i)"] = value }
            }
        }
        container.envs["ACCESSORY_COUNT"] = "\(allocations.count)"
        return container
    }
}
