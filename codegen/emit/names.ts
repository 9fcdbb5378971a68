/**
 * How names are written in generated code. Every name generated from a manifest name is defined in
 * `manifest/names.ts`, where the checker guards it; this adds only how a name is printed: the
 * folder of an owner's files, and when a name can stand bare.
 */
import { isReservedWord } from "../manifest/names.js"

/** Folder of an owner's files inside the output folder: the owner name in lower camel case. */
export const ownerFolder = (owner: string): string => owner[0]!.toLowerCase() + owner.slice(1)

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** Whether `name` can be declared as a TypeScript identifier (a type, a class or a const). */
export const isDeclarableIdentifier = (name: string): boolean =>
  IDENTIFIER.test(name) && !isReservedWord(name)

/** Whether `name` can be written as a property key without quotes. */
export const isPlainPropertyName = (name: string): boolean => IDENTIFIER.test(name)
