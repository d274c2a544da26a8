// The firmware docs' own curl lines (docs/api.md), run unchanged but for <DEVICE_IP>, <USERNAME>,
// <PASSWORD> and the image path, against a running bin/framefi-device — with and without basic auth.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { eventually, removeDir, startDevice, tempDir, type RunningDevice } from "../helpers.js";
import { DOC_STEPS } from "./fixtures/docs-curl.js";
import { shellWords } from "./fixtures/http.js";
import { curl } from "../fixtures/http.js";
import { api } from "./fixtures/device.js";

let work: string;
let image: string;
let imageBytes: Buffer;
before(async () => {
  work = await tempDir("framefi-docs-");
  image = join(work, "image.jpg");
  imageBytes = randomBytes(50_000);
  await writeFile(image, imageBytes);
});
after(async () => {
  await removeDir(work);
});

for (const creds of [undefined, ["docuser", "docpass"] as const]) {
  describe(creds ? "Authenticated tab (curl -u <USERNAME>:<PASSWORD>)" : "Unauthenticated tab", () => {
    let dev: RunningDevice;
    before(async () => {
      dev = await startDevice({ args: creds ? ["--web-user", creds[0], "--web-password", creds[1]] : [] });
    });
    after(async () => {
      await dev?.stop();
    });

    test("every curl line answers as docs/api.md shows", async () => {
      for (const step of DOC_STEPS) {
        let line = step.line.replaceAll("<DEVICE_IP>", `127.0.0.1:${dev.port}`).replace("/path/to/your/image.jpg", image);
        if (creds) line = line.replace(/^curl /, "curl -u <USERNAME>:<PASSWORD> ").replace("<USERNAME>:<PASSWORD>", `${creds[0]}:${creds[1]}`);
        const words = shellWords(line);
        assert.equal(words[0], "curl");
        const r = await curl(words.slice(1));
        assert.equal(r.status, step.status ?? 200, `${line}\n→ ${r.status} ${r.body} ${r.stderr}`);
        if (typeof step.expect === "string") assert.equal(r.body, step.expect, line);
        else step.expect(r.body);
        if (step.thenMode) {
          const { thenMode, thenDisplay } = step;
          await eventually(
            async () => {
              const s = await api(dev, creds, 1_000).status();
              return s.mode === thenMode && (!thenDisplay || s.display.status === thenDisplay);
            },
            3_000,
            25,
          );
        }
        if (step.line.includes("upload") && r.status === 200) {
          assert.deepEqual(await readFile(join(dev.card, "image.jpg")), imageBytes, "uploaded bytes land on the card");
        }
      }
    });
  });
}
