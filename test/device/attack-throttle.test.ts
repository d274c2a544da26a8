// The login throttle attacked by one who knows the read-only account: its correct logins must not
// wipe the address's failed guesses of the full account's password. Real bin/framefi-device.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startDevice } from "../helpers.js";
import { call } from "./fixtures/http.js";

test("read-only logins between guesses of the full password do not reset the throttle", async (t) => {
  const dev = await startDevice({
    args: ["--web-user", "admin", "--web-password", "right", "--read-only-user", "viewer", "--read-only-password", "look", "--login-attempts", "2"],
  });
  t.after(() => dev.stop());
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) {
    statuses.push((await call(dev.url, "GET", "/", { auth: ["admin", `guess-${i}`] })).status);
    statuses.push((await call(dev.url, "GET", "/", { auth: ["viewer", "look"] })).status);
  }
  // Two free failures, then the address waits: every further attempt, the viewer's too, gets 429.
  assert.deepEqual(statuses.slice(0, 3), [401, 200, 401]);
  assert.ok(
    statuses.slice(3).every((s) => s === 429),
    `statuses ${statuses.join(" ")}`,
  );
});
