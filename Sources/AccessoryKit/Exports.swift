// `import AccessoryKit` alone names every type a user of the manager needs: `Accessory`,
// `AccessoryEvent`, `DisconnectReason`, `ConnectionID` and the rest of the core, the traces
// and the udevadm importer, and the usbmon captures (`USBCapture`).
@_exported import AccessoryCore
@_exported import AccessoryTraces
@_exported import AccessoryCapture
