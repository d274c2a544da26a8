// Attack: rclone's stderr lines were cut to 300 characters before the secrets were cut out of them, so a secret
// that straddled the cut was no longer found and its first part reached the error message.
import { test } from "node:test";
import assert from "node:assert/strict";
import { redact } from "../../src/client/sources/rclone.js";

test("a secret that straddles the 300-character cut of an rclone stderr line leaks no part of it", () => {
  const secret = "S3cretPassw0rdThatIsLong";
  const line = `2024/01/01 00:00:00 ERROR : ${"x".repeat(290)}${secret} more`;
  const shown = redact([line], [secret]);
  for (let n = 4; n <= secret.length; n++) assert.ok(!shown.includes(secret.slice(0, n)), `leaked ${secret.slice(0, n)}`);
  assert.ok(shown.length <= 300);
});
