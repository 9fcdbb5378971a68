/**
 * Builds the client objects the generated `Order.client(akter)` returns. The generated code gives
 * the precise type; this module does the work for every owner alike.
 */
import type { Akter } from "../akter.js"
import type { Caller } from "../model/caller.js"
import type { OwnerRegistration } from "../model/registration.js"

export const makeOwnerClient = <Client>(
  _akter: Akter,
  _owner: OwnerRegistration,
  _caller?: Caller,
): Client => {
  throw new Error("makeOwnerClient: not implemented yet")
}

export const makeEffectOwnerClient = <Client>(
  _akter: Akter,
  _owner: OwnerRegistration,
  _caller?: Caller,
): Client => {
  throw new Error("makeEffectOwnerClient: not implemented yet")
}
