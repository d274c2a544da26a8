// The error for a command line that cannot be run as given.
import { FrameFiError } from "../errors.js";

/** A command line that cannot be run as given (exit code 2); `problem` says what is wrong and what to do. */
export class UsageError extends FrameFiError {
  override name = "UsageError";
  constructor(problem: string) {
    super("FRAMEFI_USAGE", { problem });
  }
}
