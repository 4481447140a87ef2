// `import AccessoryKit` alone names every type a user of the manager needs: `Accessory`,
// `AccessoryEvent`, `DisconnectReason`, `ConnectionID` and the rest of the core, and the
// traces and the udevadm importer.
@_exported import AccessoryCore
@_exported import AccessoryTraces
