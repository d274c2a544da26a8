// The login throttle shared by the device's login surfaces: its delays, turn-taking and bounded memory, on a
// clock the test moves (test/ftp/attacks.test.ts and test/device/attacks.test.ts drive it over real sockets).
import assert from "node:assert/strict";
import { test } from "node:test";
import { addressKey, createLoginThrottle, ThrottledError } from "../../src/device/auth/throttle.js";

test("five failures are free (--login-attempts), then delays double up to 60 s; a success starts afresh", () => {
  let t = 0;
  const throttle = createLoginThrottle({ now: () => t });
  const delays: number[] = [];
  for (let i = 0; i < 12; i++) {
    const wait = throttle.admit("192.0.2.1");
    t += wait;
    delays.push(throttle.failed("192.0.2.1", "web").delayMs);
  }
  assert.deepEqual(delays, [0, 0, 0, 0, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
  assert.equal(throttle.admit("198.51.100.7"), 0, "another address is not slowed");
  t += throttle.admit("192.0.2.1");
  throttle.succeeded("192.0.2.1", "web");
  assert.equal(throttle.admit("192.0.2.1"), 0);
});

test("parallel attempts from one address take turns, and those too far behind are refused", () => {
  const t = 0;
  const throttle = createLoginThrottle({ now: () => t, freeFailures: 3, maxDelayMs: 4_000 });
  for (let i = 0; i < 3; i++) throttle.failed("192.0.2.1", "web");
  const waits = [0, 1, 2, 3].map(() => throttle.admit("192.0.2.1"));
  assert.deepEqual(waits, [1_000, 2_000, 3_000, 4_000]);
  assert.throws(
    () => throttle.admit("192.0.2.1"),
    (e: unknown) => e instanceof ThrottledError && e.retryAfterMs === 5_000,
  );
});

test("addresses are forgotten after a quiet spell, and at most maxAddresses are kept", () => {
  let t = 0;
  const throttle = createLoginThrottle({ now: () => t, freeFailures: 3, maxAddresses: 2, forgetAfterMs: 60_000 });
  for (let i = 0; i < 4; i++) throttle.failed("192.0.2.1", "web");
  t = 61_000;
  assert.equal(throttle.admit("192.0.2.1"), 0, "forgotten after the quiet spell");
  for (let i = 0; i < 4; i++) throttle.failed("192.0.2.1", "web");
  assert.ok(throttle.admit("192.0.2.1") > 0);
  for (let i = 0; i < 4; i++) throttle.failed("192.0.2.2", "web");
  for (let i = 0; i < 4; i++) throttle.failed("192.0.2.3", "web");
  assert.equal(throttle.admit("192.0.2.1"), 0, "the least recently failed address made room");
  assert.ok(throttle.admit("192.0.2.3") > 0);
});

test("IPv6 addresses count per /64; IPv4-mapped ones as IPv4", () => {
  assert.equal(addressKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assert.equal(addressKey("2001:db8:1:2:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64");
  assert.equal(addressKey("2001:db8::1"), "2001:db8:0:0::/64");
  assert.equal(addressKey("::1"), "0:0:0:0::/64");
  assert.equal(addressKey("fe80::1%eth0"), "fe80:0:0:0::/64");
  assert.equal(addressKey("::ffff:192.0.2.1"), "192.0.2.1");
  assert.equal(addressKey("192.0.2.1"), "192.0.2.1");
});

test("turning an attempt away (retryAfter) reserves no turn: after the wait it is checked", () => {
  let t = 0;
  const throttle = createLoginThrottle({ now: () => t, freeFailures: 1 });
  assert.equal(throttle.retryAfter("192.0.2.1"), 0);
  assert.deepEqual(throttle.failed("192.0.2.1", "web"), { failures: 1, delayMs: 1_000 });
  assert.equal(throttle.retryAfter("192.0.2.1"), 1_000);
  assert.equal(throttle.retryAfter("192.0.2.1"), 1_000, "asking again costs nothing");
  t = 1_000;
  assert.equal(throttle.retryAfter("192.0.2.1"), 0);
  assert.equal(throttle.admit("192.0.2.1"), 0, "a surface that holds attempts sees the same turn");
  assert.equal(throttle.retryAfter("192.0.2.1"), 1_000, "and its reservation delays the next attempt on any surface");
  assert.equal(addressKey(undefined), "unknown");
});

test("a success at one account does not wipe the address's failures at another (knowing the FTP login is no reset)", () => {
  const t = 0;
  const throttle = createLoginThrottle({ now: () => t });
  for (let i = 0; i < 6; i++) throttle.failed("192.0.2.9", "web");
  assert.ok(throttle.retryAfter("192.0.2.9") > 0);
  throttle.succeeded("192.0.2.9", "ftp");
  assert.ok(throttle.retryAfter("192.0.2.9") > 0, "the FTP login left the web guesses counted");
  throttle.succeeded("192.0.2.9", "web");
  assert.equal(throttle.retryAfter("192.0.2.9"), 0, "the web login starts the address afresh");
});
