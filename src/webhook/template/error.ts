/**
 * A template that cannot be parsed or executed. The message has Go's text/template form:
 * `template: NAME:LINE: message` for parse errors and
 * `template: NAME:LINE:COL: executing "NAME" at <node>: message` for execution errors.
 */
export class TemplateError extends Error {
  override readonly name = "TemplateError";
  constructor(
    message: string,
    /** The template's name (the hooks file, as the caller named it). */
    readonly templateName: string,
    /** The 1-based line the error is reported at. */
    readonly line: number,
  ) {
    super(message);
  }
}
