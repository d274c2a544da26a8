// The one way the card refuses an operation; its code (a row of ../errors.ts) tells each door its answer.
import { DeviceError, type ErrorCode } from "../errors.js";
import { UNPRINTABLE } from "../../shared/unprintable.js";

/** The rows of the card's refusals. */
export type CardErrorCode = Extract<
  ErrorCode,
  | "DEVICE_UNSAFE_PATH"
  | "DEVICE_NOT_FOUND"
  | "DEVICE_NUL_IN_PATH"
  | "DEVICE_OUTSIDE_CARD"
  | "DEVICE_NAME_NOT_ALLOWED"
  | "DEVICE_CONTROL_CHARACTER"
  | "DEVICE_NO_SPACE"
  | "DEVICE_FILESYSTEM_FULL"
  | "DEVICE_TOO_BIG"
  | "DEVICE_CARD_FULL"
  | "DEVICE_FILE_TOO_BIG"
  | "DEVICE_BUSY"
  | "DEVICE_FOLDER_BUSY"
  | "DEVICE_FOLDER_GONE"
  | "DEVICE_IN_MSC_MODE"
  | "DEVICE_WRITE_ABORTED"
>;

export class CardError<C extends CardErrorCode = CardErrorCode> extends DeviceError<C> {
  override name = "CardError";
}

/** A client-supplied name, safe to put in a message (control characters replaced, length capped). */
export function printable(name: string): string {
  return name.replace(UNPRINTABLE, "?").slice(0, 200);
}
