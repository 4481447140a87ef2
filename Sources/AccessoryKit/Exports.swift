// `import AccessoryKit` alone names every type a user of the manager needs: `Accessory`,
// `AccessoryEvent`, `DisconnectReason`, `ConnectionID`, traces and the rest of the core.
@_exported import AccessoryCore
