import AccessoryCore
import Logging

extension AccessoryManager {
    /// Opens a session with an accessory in one protocol. Close it with
    /// ``AccessorySession/close()``; a session still open at ``shutdown()`` is closed then,
    /// with a warning naming it.
    ///
    /// The protocol picks the interface: a vendor-specific interface whose string descriptor
    /// is the protocol name, else one the manager's ``Configuration/protocolTable`` declares.
    /// The session claims it (detaching a kernel driver only when
    /// ``AccessorySession/Options/detachKernelDriver`` asks). It reads nothing until the
    /// code does: no IN transfer is submitted before the first read, `input` iteration or
    /// ``AccessorySession/transferIn(_:length:timeout:)``.
    ///
    /// - Parameters:
    ///   - accessory: a connected accessory.
    ///   - protocolName: the protocol to speak, such as `com.example.reader`.
    ///   - name: a name for diagnostics and for `.busy` messages; `session-N` by default.
    ///   - options: buffers, transfers in flight and timeouts (see ``AccessorySession/Options``).
    /// - Throws: ``AccessoryError``: `.notFound` when the accessory is no longer connected;
    ///   `.protocolNotSupported`, listing what it speaks; `.busy` when a session of this
    ///   process holds the protocol ("held by session 'X'"), when another process holds the
    ///   interface, or when a kernel driver is bound; `.accessDenied`, naming the udev rule
    ///   that fixes it; `.accessoryDisconnected` when the device is gone; `.invalidArgument`
    ///   for an option out of its range (see ``AccessorySession/Options``).
    ///
    /// The device I/O (opening the node, reading interface names, claiming, selecting the
    /// alternate setting) runs off the manager's actor: an unresponsive device delays only
    /// its own open, never the manager's events or other sessions.
    public func openSession(
        to accessory: Accessory, protocol protocolName: String, name: String? = nil,
        options: AccessorySession.Options = .init()
    ) async throws(AccessoryError) -> AccessorySession {
        try await openSession(to: accessory, protocolName: protocolName, interface: nil, name: name, options: options)
    }

    /// Opens a session on one interface of an accessory, chosen by its number
    /// (`bInterfaceNumber`) rather than by a protocol: for a device whose interfaces carry
    /// no protocol string and that no rule of the ``Configuration/protocolTable`` names.
    ///
    /// The interface's lowest alternate setting is selected, and the session streams
    /// through its first bulk endpoint in each direction, else its first interrupt one, as
    /// ``openSession(to:protocol:name:options:)`` does. The session's
    /// ``AccessorySession/protocolName`` is `interface N`: a second session on the same
    /// interface is refused with `.busy`.
    ///
    /// - Throws: ``AccessoryError``, as ``openSession(to:protocol:name:options:)`` does, and
    ///   `.invalidArgument` when the device has no interface `number`, listing those it has.
    public func openSession(
        to accessory: Accessory, interface number: UInt8, name: String? = nil,
        options: AccessorySession.Options = .init()
    ) async throws(AccessoryError) -> AccessorySession {
        try await openSession(to: accessory, protocolName: "interface \(number)", interface: number, name: name, options: options)
    }

    /// Opens a session in `protocolName`; on interface `number` when one is given, else on
    /// the interface the protocol picks.
    private func openSession(
        to accessory: Accessory, protocolName: String, interface number: UInt8?, name: String?,
        options: AccessorySession.Options
    ) async throws(AccessoryError) -> AccessorySession {
        let label = AccessorySession.label(accessory)
        let operation = "open session"
        try options.validate(operation: operation)
        guard !isShutDown else {
            throw AccessoryError(.sessionClosed, "the accessory manager has shut down", operation: operation)
        }
        let id = accessory.connectionID
        guard let info = deviceInfo(for: id), let address = tracker.entry(id)?.descriptor.address else {
            throw Self.notConnected(accessory, operation: operation)
        }
        let key = SessionKey(connection: id, protocolName: protocolName)
        let sessionName: String
        switch sessions.reserve(key, name: name) {
        case .held(let holder):
            throw AccessoryError(
                .busy, "\(protocolName) on accessory \(label) is held by session '\(holder.name)'", operation: operation)
        case .beingOpened:
            throw AccessoryError(.busy, "\(protocolName) on accessory \(label) is being opened by another task", operation: operation)
        case .reserved(let reservedName):
            sessionName = reservedName
        }
        defer { sessions.endReservation(key) }

        let opener = SessionOpener(
            host: host, info: info, address: address, protocolName: protocolName, interfaceNumber: number, options: options,
            table: configuration.protocolTable, clock: configuration.clock, logger: logger, label: label,
            sessionName: sessionName,
            onNoDevice: SuspectPipes.reporter(to: self, id: id, label: label))
        let prepared: SessionOpener.Prepared
        do throws(AccessoryError) {
            prepared = try await opener.open()
        } catch {
            if error.code.disconnectReason != nil { reportNoDevice(id, operation: error.operation ?? "open") }
            throw error
        }

        // Back on the actor: the connection may have ended, or the manager shut down, meanwhile.
        guard !isShutDown, tracker.entry(id) != nil else {
            await prepared.undo()
            throw isShutDown
                ? AccessoryError(.sessionClosed, "the accessory manager has shut down", operation: operation)
                : Self.notConnected(accessory, operation: operation)
        }
        let session = AccessorySession(
            name: sessionName, accessory: accessory, protocolName: protocolName, options: options, prepared: prepared, manager: self,
            logger: logger)
        sessions.open(key, SessionEntry(handle: session, resources: session.resources))
        if let watch = automaticRecovery.timeoutWatch(for: id, on: self) { session.pipe.calls.setTimeoutWatch(watch) }
        return session
    }

    /// Runs `body` with a session open, and closes the session afterwards however `body`
    /// ends (returns, throws or is cancelled). When `body` returns, what it wrote is flushed
    /// first (a failure to send it is thrown). The close is not cancellable.
    ///
    /// This form has typed throws: it is chosen when `body` throws only ``AccessoryError``
    /// (a closure annotated `{ (session) throws(AccessoryError) in … }`) or nothing. See
    /// ``openSession(to:protocol:name:options:)`` for the parameters and errors.
    public func withSession<R: Sendable>(
        to accessory: Accessory, protocol protocolName: String, name: String? = nil,
        options: AccessorySession.Options = .init(), isolation: isolated (any Actor)? = #isolation,
        _ body: (AccessorySession) async throws(AccessoryError) -> R
    ) async throws(AccessoryError) -> R {
        try await SessionScope.run(opening: { () async throws(AccessoryError) in
            try await openSession(to: accessory, protocol: protocolName, name: name, options: options)
        }, body, failure: { $0 })
    }

    /// Runs `body` with a session open, as the typed form above does, for a `body` that can
    /// throw any error; `body`'s own errors are rethrown as they are.
    public func withSession<R: Sendable>(
        to accessory: Accessory, protocol protocolName: String, name: String? = nil,
        options: AccessorySession.Options = .init(), isolation: isolated (any Actor)? = #isolation,
        _ body: (AccessorySession) async throws -> R
    ) async throws -> R {
        try await SessionScope.run(opening: { () async throws(AccessoryError) in
            try await openSession(to: accessory, protocol: protocolName, name: name, options: options)
        }, body, failure: { $0 })
    }

    /// The sessions open now, in name order.
    public var openSessions: [AccessorySession] {
        sessions.inNameOrder.compactMap(\.handle).filter { !$0.isClosed }
    }

    // MARK: Hooks for the manager

    /// Ends every session on a connection that the manager has just disconnected.
    func endSessions(of id: ConnectionID, reason: DisconnectReason) {
        for entry in sessions.sessions(on: id) {
            entry.resources.connectionEnded(reason)
        }
    }

    /// Closes the sessions still open, each with a warning that names it (dropped ones whose
    /// close is under way too). Runs at shutdown, while the event thread still completes
    /// their transfers.
    func closeSessionsAtShutdown() async {
        for entry in sessions.inNameOrder {
            logger.warning("closing session '\(entry.resources.name)' still open at shutdown")
            entry.resources.connectionEnded(.shutdown)
            await entry.resources.close(manager: self)
        }
    }

    func sessionDidClose(_ resources: SessionResources) {
        sessions.close(resources.key) { $0.resources === resources }
    }

    // MARK: Internal API for sessions

    /// Opens the device behind a connection, from libusb's list or, when libusb's cache
    /// missed it, from its device node. A NO_DEVICE failure triggers a reconcile. (Sessions
    /// open theirs off the actor, with a ``SessionOpener``; the hardware tests use this.)
    func openDevice(_ id: ConnectionID) throws(AccessoryError) -> any USBDeviceConnection {
        guard let info = tracker.device(id), let address = info.descriptor.address else {
            throw AccessoryError(.notFound, "no accessory is connected with connection ID \(id)", operation: "open")
        }
        do {
            return try host.open(
                bus: info.descriptor.bus, address: address, vendor: info.descriptor.vendor, product: info.descriptor.product)
        } catch {
            if error.code.disconnectReason != nil { reportNoDevice(id, operation: error.operation ?? "open") }
            throw error
        }
    }
}
