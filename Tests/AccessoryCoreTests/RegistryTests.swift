import Testing
@testable import AccessoryCore
