// bin/framefi-device as a real Linux USB mass-storage gadget. A Debian kernel boots under qemu with
// dummy_hcd, whose USB host side sees the gadget as a SCSI disk — the "frame". fixtures/scenario.sh drives the
// device, the client and the frame inside the VM; this test prepares the photos and asserts on what it found.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { bin, removeDir, repoRoot, run, tempDir } from "../helpers.js";
import { bootVm, buildInitramfs, kernel, missingForVm } from "./fixtures/vm.js";

const PHOTOS: Record<string, Buffer> = {
  "a.jpg": Buffer.alloc(150_000, 1),
  "2024/summer/b.jpg": Buffer.from("b".repeat(70_000)),
  "Été/ça.jpg": Buffer.from("utf-8 names survive"),
  "empty.jpg": Buffer.alloc(0),
};

const md5 = (b: Buffer): string => createHash("md5").update(b).digest("hex");
/** What `md5sum` lists for the synced files, as the scenario writes it (sorted by path). */
const expectedListing = (extra: Record<string, Buffer> = {}): string =>
  Object.entries({ ...PHOTOS, ...extra })
    .map(([name, body]) => [`./${name}`, md5(body)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, sum]) => `${sum}  ${name}\n`)
    .join("");

const missing = missingForVm();
if (missing && "skip" in missing) console.log(`# SKIPPED the USB gadget test: ${missing.skip}`);

describe("USB mass-storage gadget in a VM (qemu, Debian kernel, dummy_hcd)", {
  skip: missing && "skip" in missing ? missing.skip : false,
  timeout: 330_000,
}, () => {
  let out: string;
  let work: string;
  let results: Map<string, string>;
  const read = (name: string): Promise<string> => readFile(join(out, name), "utf8");

  before(async () => {
    if (missing && "fail" in missing) throw new Error(missing.fail);
    work = await tempDir("framefi-vm-");
    out = join(work, "out");
    for (const [name, body] of Object.entries(PHOTOS)) {
      await mkdir(join(out, "photos", name, ".."), { recursive: true });
      await writeFile(join(out, "photos", name), body);
    }
    const k = kernel()!;
    const initramfs = await buildInitramfs(work, k.version, join(repoRoot, "test/gadget/fixtures/scenario.sh"));
    const vm = await bootVm(k.image, initramfs, out, 320_000);
    const text = await read("results.txt").catch(() => "");
    results = new Map(
      text
        .split("\n")
        .filter(Boolean)
        .map((l) => [l.slice(0, l.indexOf(" ")), l.slice(l.indexOf(" ") + 1)]),
    );
    if (results.get("done") !== "yes") {
      const log = await read("console.log").catch(() => "");
      const device = await read("device.log").catch(() => "");
      throw new Error(
        `the VM scenario did not finish (qemu exit ${vm.exitCode})\nresults:\n${text}\nscenario:\n${log.slice(-3000)}\ndevice:\n${device.slice(-3000)}\nconsole:\n${vm.console.slice(-2000)}`,
      );
    }
  });
  after(async () => {
    if (work) await removeDir(work);
  });

  it("the frame sees a new, empty card", () => {
    assert.equal(results.get("frame-initial"), "0");
  });

  it("framefi sync pushes the photos; back in MSC mode the frame sees exactly them, byte for byte", async () => {
    assert.equal(results.get("sync_exit"), "0", await read("sync.log"));
    assert.equal(await read("frame-after-sync.txt"), expectedListing());
  });

  it("the card figures come from the FAT filesystem and stay while the frame holds the card", async () => {
    const status = JSON.parse(await read("status-after-sync.json")) as { mode: string; sd_card: { total_size: number; used_size: number; file_count: number } };
    assert.equal(status.mode, "USB MSC");
    assert.equal(status.sd_card.file_count, Object.keys(PHOTOS).length);
    assert.ok(status.sd_card.total_size > 60 * 1024 * 1024 && status.sd_card.total_size <= 64 * 1024 * 1024, `total ${status.sd_card.total_size}`);
    assert.ok(status.sd_card.used_size >= 220_000, `used ${status.sd_card.used_size}`);
  });

  it("an upload in MSC mode is refused", async () => {
    assert.equal(results.get("msc_upload"), "400");
    assert.match(await read("msc-upload.json"), /Cannot upload in MSC mode/);
  });

  it("names FAT cannot hold are refused with a clear error, over HTTP and FTP", async () => {
    assert.equal(results.get("fat_colon"), "400");
    assert.match(await read("fat-colon.json"), /FAT cards cannot hold the character :/);
    assert.equal(results.get("fat_case"), "400");
    assert.match(await read("fat-case.json"), /the card has \\"a\.jpg\\", and FAT cards ignore case/);
    assert.equal(results.get("fat_ftp"), "553");
  });

  it("after kill -9 in FTP mode a restart leaves the image fsck-clean and the frame sees it", async () => {
    assert.equal(results.get("ftp_upload"), "200");
    assert.equal(results.get("mounted_after_kill"), "yes");
    assert.equal(results.get("fsck_after_restart"), "0", await read("fsck-after-restart.txt"));
    assert.equal(await read("frame-after-restart.txt"), expectedListing({ "during-ftp.jpg": PHOTOS["a.jpg"]! }));
  });

  it("--order with --sort-card: the frame finds each folder's entries in name order, folders first", async () => {
    assert.equal(results.get("sync_ordered_exit"), "0", await read("sync-ordered.log").catch(() => ""));
    const listing = new Map<string, string[]>();
    let dir = "";
    for (const line of (await read("frame-order.txt")).split("\n").filter(Boolean)) {
      if (line.endsWith(":")) listing.set((dir = line.slice(0, -1)), []);
      else listing.get(dir)!.push(line);
    }
    const bytewise = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));
    const sorted = (names: string[]): string[] => [
      ...names.filter((n) => n.endsWith("/")).sort(bytewise),
      ...names.filter((n) => !n.endsWith("/")).sort(bytewise),
    ];
    const ordered = listing.get("ordered") ?? [];
    assert.deepEqual(
      ordered
        .filter((n) => !n.endsWith("/"))
        .map((n) => n.replace(/^\d{8}-/, ""))
        .sort(),
      ["a.jpg", "empty.jpg"],
    );
    assert.match(ordered.join(" "), /^2024\/ Été\/ \d{8}-\S+\.jpg \d{8}-\S+\.jpg$/);
    assert.deepEqual(ordered, sorted(ordered));
    // The root's "ordered" folder came last, after during-ftp.jpg: found in name order all the same.
    const root = listing.get(".") ?? [];
    assert.deepEqual(root, sorted(root));
    assert.ok(root.includes("ordered/") && root.includes("during-ftp.jpg"), root.join(" "));
  });

  it("--trash: the removed photo waits in .trash, which the frame sees with the FAT hidden attribute", async () => {
    assert.equal(results.get("sync_trash_exit"), "0", await read("sync-trash.log").catch(() => ""));
    const line = (await read("frame-trash.txt")).trim();
    assert.match(line, /\/ordered\/\.trash$/, line);
    assert.match(line.slice(0, line.indexOf("/")), /h/, `hidden: ${line}`);
  });

  it("collections: Home Assistant's select swaps the frame's card image, and back", async () => {
    const config = JSON.parse(await read("collection-config.json")) as { options: string[]; command_topic: string; state_topic: string };
    assert.deepEqual(config.options, ["card", "christmas", "winter"]);
    assert.equal(config.command_topic, "frame-fi/collection/set");
    assert.equal(results.get("collection_christmas"), "yes");
    assert.equal(results.get("frame-christmas"), "0", "the christmas image is empty");
    assert.equal(results.get("collection_kept"), "yes", "a restart keeps the collection");
    assert.equal(results.get("frame-christmas-restarted"), "0");
    const flood = Number(results.get("collection_flood"));
    assert.ok(flood >= 1 && flood <= 4, `21 selects in a burst: ${results.get("collection_flood")} swaps`);
    assert.equal(results.get("collection_card"), "yes");
    assert.equal(results.get("frame-card-again"), String(Object.keys(PHOTOS).length * 2 + 1), "the first card, as it was");
    assert.match(await read("device.log"), /MQTT frame-fi\/collection\/set: ignored "\.\.\/card"; send one of card, christmas, winter\./);
    assert.equal(results.get("collection_http"), "yes", "POST /collections/use swaps the image, and the collection topic says so");
    assert.deepEqual(JSON.parse(await read("collections.json")), { status: "success", collections: ["card", "christmas", "winter"], current: "winter" });
  });

  it("SIGTERM leaves the image unmounted and clean", async () => {
    assert.equal(results.get("device_exit"), "0");
    assert.equal(results.get("mounted_after_stop"), "no");
    assert.equal(results.get("fsck_after_stop"), "0", await read("fsck-after-stop.txt"));
  });
});

describe("--usb-gadget where the kernel offers no gadget", () => {
  it("says what is missing and how to enable it, and exits non-zero", async () => {
    const dir = await tempDir();
    try {
      const r = await run(
        bin("framefi-device"),
        [
          "--usb-gadget",
          "--card-image",
          join(dir, "card.img"),
          "--gadget-udc",
          "framefi-test-no-such-udc",
          "--card",
          join(dir, "card"),
          "--state",
          join(dir, "state"),
        ],
        { timeoutMs: 60_000 },
      );
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^framefi-device: the USB gadget backend cannot run here: .*no USB device controller/);
      assert.match(r.stderr, /dtoverlay=dwc2/);
      assert.match(r.stderr, /modules-load=dwc2,libcomposite/);
    } finally {
      await removeDir(dir);
    }
  });

  it("--sort-card without --usb-gadget is a usage error", async () => {
    const r = await run(bin("framefi-device"), ["--sort-card"], { timeoutMs: 60_000 });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--sort-card works on the FAT card images of --usb-gadget/);
  });

  it("--usb-gadget without --card-image is a usage error", async () => {
    const r = await run(bin("framefi-device"), ["--usb-gadget"], { timeoutMs: 60_000 });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--usb-gadget needs --card-image PATH/);
  });
});
