// How a sync shows what it does: a progress bar on a terminal (files, bytes, rate, time left), otherwise one
// line per file on stdout, so logs and scripts can follow. Steps and failures go to stderr.
import type { WriteStream } from "node:tty";
import { blankControls } from "../api/text.js";
import { bytes, duration } from "../cli/format.js";
import type { Plan, Upload } from "./plan.js";
import type { SyncEvents } from "./sync.js";

type Write = (line: string) => void;

/** Hears nothing: the base of the reporters below, and of a library sync's events. */
export const NO_EVENTS: SyncEvents = {
  step: () => undefined,
  planned: () => undefined,
  uploadStarted: () => undefined,
  uploadProgress: () => undefined,
  uploaded: () => undefined,
  deleted: () => undefined,
  created: () => undefined,
  failed: () => undefined,
  photoDone: () => undefined,
};

/** `write` with the control characters of each line blanked: a name's line break cannot split or fake a line. */
const oneLine =
  (write: Write): Write =>
  (line) =>
    write(blankControls(line));

/** Says nothing but failures and steps (for --json and --dry-run, whose output is printed at the end). */
export function quietEvents(write: Write): SyncEvents {
  const err = oneLine(write);
  return { ...NO_EVENTS, step: (text) => err(text), failed: (rel, reason) => err(`failed ${rel}: ${reason}`) };
}

/** One line per file on `out`; steps and failures on `err`. */
export function lineEvents(writeOut: Write, writeErr: Write): SyncEvents {
  const [out, err] = [oneLine(writeOut), oneLine(writeErr)];
  return {
    ...quietEvents(err),
    planned: (plan) => err(planLine(plan)),
    uploaded: (u) => out(`uploaded ${u.rel} (${bytes(u.size)})`),
    deleted: (rel, type) => out(type === "dir" ? `deleted folder ${rel}/` : `deleted ${rel}`),
    created: (rel) => out(`created folder ${rel}/`),
    photoDone: (rel, source, size) => {
      if (size !== undefined) out(`converted ${source} → ${rel} (${bytes(size)})`);
    },
  };
}

export function planLine(plan: Plan): string {
  const total = plan.uploads.reduce((n, u) => n + u.size, 0);
  const deletes = plan.deleteFiles.length + plan.deleteDirs.length;
  const convert = plan.pending.length > 0 ? `, convert ${plan.pending.length} photo${plan.pending.length === 1 ? "" : "s"} (and upload what changed)` : "";
  return `To do: upload ${plan.uploads.length} file${plan.uploads.length === 1 ? "" : "s"} (${bytes(total)})${convert}, delete ${deletes}, create ${plan.mkdirs.length} folder${plan.mkdirs.length === 1 ? "" : "s"}; ${plan.unchanged} unchanged.`;
}

const BAR_WIDTH = 24;

/** A progress bar redrawn in place on the terminal `tty`. Call `stop()` when the sync is over. */
export function barEvents(tty: WriteStream): SyncEvents & { stop(): void } {
  let totalFiles = 0;
  let totalBytes = 0;
  let doneFiles = 0;
  let doneBytes = 0;
  const inFlight = new Map<Upload, number>();
  /** A failed file counts as dealt with (never subtracted): the bar only moves forward. */
  let failedFiles = 0;
  let failedBytes = 0;
  const pending = new Map<string, Upload>();
  let started = 0;
  let shown = false;
  let finished = false;

  const clear = (): void => {
    if (shown) tty.write("\r\x1b[K");
    shown = false;
  };
  const draw = (): void => {
    if (totalFiles === 0 || finished) return;
    let sent = doneBytes;
    for (const n of inFlight.values()) sent += n;
    const dealt = sent + failedBytes;
    const fraction = totalBytes > 0 ? Math.min(1, dealt / totalBytes) : (doneFiles + failedFiles) / totalFiles;
    const filled = Math.round(fraction * BAR_WIDTH);
    const elapsed = started ? (Date.now() - started) / 1000 : 0;
    const rate = elapsed > 0.5 ? sent / elapsed : 0;
    const left = rate > 0 ? duration((totalBytes - dealt) / rate) : "–";
    const failed = failedFiles > 0 ? `, ${failedFiles} failed` : "";
    const line = `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${doneFiles}/${totalFiles} files${failed}  ${bytes(sent)}/${bytes(totalBytes)}  ${rate > 0 ? bytes(rate) + "/s" : "–"}  ${left} left`;
    tty.write(`\r\x1b[K${line.slice(0, Math.max(20, (tty.columns || 80) - 1))}`);
    shown = true;
  };
  const above = (text: string): void => {
    clear();
    tty.write(blankControls(text) + "\n");
    draw();
  };
  const timer = setInterval(draw, 200);
  timer.unref();
  /** Draws the bar one last time and leaves it on its own line. */
  const finish = (): void => {
    draw();
    if (shown) tty.write("\n");
    shown = false;
    finished = true;
    clearInterval(timer);
  };
  const checkDone = (): void => {
    if (doneFiles + failedFiles === totalFiles) finish();
  };

  return {
    step: (text) => above(text),
    planned: (plan) => {
      above(planLine(plan));
      totalFiles = plan.uploads.length + plan.pending.length;
      totalBytes = plan.uploads.reduce((n, u) => n + u.size, 0);
      for (const u of plan.uploads) pending.set(u.rel, u);
    },
    photoDone: (_rel, _source, _size, upload) => {
      if (upload) totalBytes += upload.size;
      else {
        totalFiles--;
        checkDone();
      }
    },
    uploadStarted: (u) => {
      started ||= Date.now();
      inFlight.set(u, 0);
    },
    uploadProgress: (u, sent) => inFlight.set(u, sent),
    uploaded: (u) => {
      inFlight.delete(u);
      pending.delete(u.rel);
      doneFiles++;
      doneBytes += u.size;
      checkDone();
    },
    deleted: () => undefined,
    created: () => undefined,
    failed: (rel, reason) => {
      above(`failed ${rel}: ${reason}`);
      // An upload that failed, started or not (its folder could not be created); other failures are no upload.
      const u = pending.get(rel);
      if (!u) return;
      pending.delete(rel);
      inFlight.delete(u);
      failedFiles++;
      failedBytes += u.size;
      checkDone();
    },
    stop: () => {
      if (!finished) finish();
    },
  };
}
