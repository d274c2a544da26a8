// The error for a command line that cannot be run as given.
import { FrameFiError } from "../errors.js";

/** A command line (or photo option) that cannot be run as given: exit code 2. */
export class UsageError extends FrameFiError {
  override name = "UsageError";
}
