// `framefi-device --pull SOURCE`: the real device fetches its photos itself after start, and again when Home
// Assistant's "Sync now" button (MQTT discovery) is pressed; the last pull is published on MQTT and in the web panel. A share that
// cannot be reached leaves the card as it is and says so.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bin, freePort, removeDir, run, startDevice, tempDir } from "../helpers.js";
import { embeddedBroker, type Broker } from "../mqtt/fixtures/broker.js";
import { unique, watch } from "../mqtt/fixtures/frame.js";
import { startWebdav } from "../client/fixtures/shares.js";

describe("framefi-device --pull", () => {
  let broker: Broker;
  before(async () => {
    broker = await embeddedBroker();
  });
  after(async () => broker?.stop());

  test("pulls after start and on the Sync now button; MQTT shows the last pull", async () => {
    const source = await tempDir("framefi-pull-src-");
    await writeFile(join(source, "a.jpg"), "first photo");
    await writeFile(join(source, "b.jpg"), "second photo");
    const ids = unique("pull");
    const w = await watch(broker.url, [`${ids.topicPrefix}/#`, `${ids.discoveryPrefix}/#`]);
    const args = ["--pull", source, "--every", "1h", "--mqtt-url", broker.url, "--mqtt-topic-prefix", ids.topicPrefix];
    const dev = await startDevice({
      args: [...args, "--mqtt-discovery-prefix", ids.discoveryPrefix, "--mqtt-client-id", ids.clientId, "--ha-discovery", "--boot-delay", "0"],
    });
    try {
      const first = await w.waitFor(`${ids.topicPrefix}/pull`);
      assert.deepEqual(
        { ...JSON.parse(first.text), time: undefined },
        { time: undefined, ok: true, uploaded: 2, deleted: 0, unchanged: 0, failed: 0, error: "" },
      );
      assert.equal(await readFile(join(dev.card, "b.jpg"), "utf8"), "second photo");
      const panel = (await (await fetch(`${dev.url}/panel/state`)).json()) as { pull: { uploaded: number; ok: boolean } };
      assert.deepEqual([panel.pull.uploaded, panel.pull.ok], [2, true], "the web panel shows the last pull");
      const button = await w.waitFor(`${ids.discoveryPrefix}/button/${ids.topicPrefix.replace(/[^a-zA-Z0-9_-]+/g, "_")}/pull/config`);
      const config = JSON.parse(button.text) as { command_topic: string; payload_press: string };
      assert.equal(config.command_topic, `${ids.topicPrefix}/pull/set`);

      await writeFile(join(source, "c.jpg"), "third photo");
      const from = w.messages.length;
      await w.publish(config.command_topic, config.payload_press);
      const second = await w.waitFor(`${ids.topicPrefix}/pull`, (text) => JSON.parse(text).uploaded === 1, undefined, from);
      assert.equal(JSON.parse(second.text).unchanged, 2);
      assert.ok((await stat(join(dev.card, "c.jpg"))).isFile());
      const status = (await (await fetch(`${dev.url}/`)).json()) as { mode: string };
      assert.equal(status.mode, "USB MSC", "back in MSC mode, where the frame reads the card");
    } finally {
      await dev.stop();
      await w.close();
      await removeDir(source);
    }
  });

  test("--every without --pull, or too short, stops with a usage error", async () => {
    const lone = await run(bin("framefi-device"), ["--every", "1h"]);
    assert.deepEqual([lone.code, lone.stderr], [2, "framefi-device: --every needs --pull SOURCE: the folder or share the device fetches its photos from\n"]);
    const short = await run(bin("framefi-device"), ["--pull", "/tmp", "--every", "5s"]);
    assert.equal(short.code, 2);
    assert.match(short.stderr, /--every is a time between pulls from 1m to 30d/);
  });

  test("the share's password comes from --pull-password-file, read at each pull, never shown; never from the URL", async () => {
    const inUrl = await run(bin("framefi-device"), ["--pull", "webdav://anna:s3cret-in-url@127.0.0.1/photos"]);
    assert.deepEqual(
      [inUrl.code, inUrl.stderr],
      [
        2,
        "framefi-device: --pull webdav://anna:***@127.0.0.1/photos: a password does not go in the URL (the process list shows it); give it in --pull-password-file FILE or FRAMEFI_SOURCE_PASSWORD\n",
      ],
    );
    const missing = await run(bin("framefi-device"), ["--pull", "webdav://anna@127.0.0.1/", "--pull-password-file", "/nonexistent/pw"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^framefi-device: --pull-password-file \/nonexistent\/pw cannot be read \(ENOENT/);
    // Not a file: refused at once, not waited on (a FIFO would wait for a writer), nothing of it shown.
    const odd = await tempDir("framefi-pull-odd-");
    try {
      await run("mkfifo", [join(odd, "fifo")]);
      for (const [path, why] of [
        [join(odd, "fifo"), "not a regular file"],
        ["/dev/zero", "not a regular file"],
        [odd, "not a regular file"],
      ] as const) {
        const r = await run(bin("framefi-device"), ["--pull", "webdav://anna@127.0.0.1/", "--pull-password-file", path], { timeoutMs: 20_000 });
        assert.deepEqual(
          [r.code, r.stderr],
          [2, `framefi-device: --pull-password-file ${path} cannot be read (${why}); give a readable file whose first line is the password\n`],
        );
      }
      await writeFile(join(odd, "big"), "x".repeat(5000));
      const big = await run(bin("framefi-device"), ["--pull", "webdav://anna@127.0.0.1/", "--pull-password-file", join(odd, "big")]);
      assert.equal(big.code, 2);
      assert.match(big.stderr, /cannot be read \(5000 bytes, more than 4096\)/);
      assert.ok(!big.stderr.includes("xxxx"));
    } finally {
      await removeDir(odd);
    }

    const photos = await tempDir("framefi-pull-dav-");
    const secrets = await tempDir("framefi-pull-secret-");
    await writeFile(join(photos, "a.jpg"), "a photo from the share");
    const share = await startWebdav(photos);
    const file = join(secrets, "password");
    const WRONG = "not-the-password-9f2e";
    await writeFile(file, `${WRONG}\n`);
    const ids = unique("pullpw");
    const w = await watch(broker.url, [`${ids.topicPrefix}/#`]);
    const dev = await startDevice({
      args: ["--pull", share.source, "--pull-password-file", file, "--mqtt-url", broker.url, "--mqtt-topic-prefix", ids.topicPrefix],
    });
    try {
      const failed = await w.waitFor(`${ids.topicPrefix}/pull`);
      assert.equal(JSON.parse(failed.text).ok, false, failed.text);
      // The password written anew is the one the next pull logs in with: no restart.
      await writeFile(file, `${share.password}\nanything after the first line\n`);
      const from = w.messages.length;
      await w.publish(`${ids.topicPrefix}/pull/set`, "PRESS");
      const ok = await w.waitFor(`${ids.topicPrefix}/pull`, (text) => JSON.parse(text).ok === true, 30_000, from);
      assert.equal(JSON.parse(ok.text).uploaded, 1);
      assert.equal(await readFile(join(dev.card, "a.jpg"), "utf8"), "a photo from the share");
      const panel = await (await fetch(`${dev.url}/panel/state`)).text();
      const seen = [dev.program.stdout(), dev.program.stderr(), panel, ...w.messages.map((m) => m.text)].join("\n");
      for (const secret of [WRONG, share.password]) assert.ok(!seen.includes(secret), `${secret} shown`);
    } finally {
      await dev.stop();
      await w.close();
      await share.stop();
      await removeDir(photos);
      await removeDir(secrets);
    }
  });

  test("a retained PRESS is ignored on connect: only the start-up pull runs", async () => {
    const source = await tempDir("framefi-pull-src-");
    await writeFile(join(source, "a.jpg"), "photo");
    const ids = unique("pullret");
    const w = await watch(broker.url, [`${ids.topicPrefix}/pull`]);
    await w.publish(`${ids.topicPrefix}/pull/set`, "PRESS", true);
    const mqtt = ["--mqtt-url", broker.url, "--mqtt-topic-prefix", ids.topicPrefix, "--mqtt-client-id", ids.clientId];
    const dev = await startDevice({ args: ["--pull", source, "--every", "1h", "--boot-delay", "0", ...mqtt] });
    try {
      await dev.program.waitFor(/pull\/set: ignored a retained/, 15_000);
      const first = await w.waitFor(`${ids.topicPrefix}/pull`);
      assert.equal(JSON.parse(first.text).uploaded, 1);
      assert.equal(w.messages.filter((m) => m.topic === `${ids.topicPrefix}/pull`).length, 1, "one pull, the one at start");
    } finally {
      await w.publish(`${ids.topicPrefix}/pull/set`, "", true);
      await dev.stop();
      await w.close();
      await removeDir(source);
    }
  });

  test("an unreachable share leaves the card as it is and says so", async () => {
    const card = await tempDir("framefi-pull-card-");
    await writeFile(join(card, "kept.jpg"), "kept");
    const closed = await freePort();
    const ids = unique("pullfail");
    const mqtt = ["--mqtt-url", broker.url, "--mqtt-topic-prefix", ids.topicPrefix, "--mqtt-client-id", ids.clientId];
    const dev = await startDevice({
      card,
      args: ["--pull", `webdav://anna@127.0.0.1:${closed}/`, "--pull-delete", "--boot-delay", "0", ...mqtt],
      env: { FRAMEFI_SOURCE_PASSWORD: "s3cret-pw" },
    });
    try {
      await dev.program.waitFor(/pull failed: Cannot read webdav:\/\/anna@127\.0\.0\.1:\d+; the card was left as it is\./, 30_000);
      assert.equal(await readFile(join(card, "kept.jpg"), "utf8"), "kept");
      // A watcher that connects afterwards gets the failed pull retained.
      const w = await watch(broker.url, [`${ids.topicPrefix}/pull`]);
      try {
        const last = JSON.parse((await w.waitFor(`${ids.topicPrefix}/pull`)).text) as { ok: boolean; error: string };
        assert.equal(last.ok, false);
        assert.match(last.error, /Cannot read webdav:\/\/anna@127\.0\.0\.1/);
        assert.ok(!last.error.includes("s3cret-pw"));
      } finally {
        await w.close();
      }
      const panel = await (await fetch(`${dev.url}/panel/state`)).text();
      assert.equal((JSON.parse(panel) as { pull: { ok: boolean } }).pull.ok, false, "the web panel shows the failed pull");
      assert.ok(!panel.includes("s3cret-pw") && !(dev.program.stdout() + dev.program.stderr()).includes("s3cret-pw"));
    } finally {
      await dev.stop();
      await removeDir(card);
    }
  });
});
