// The hooks being served, per hooks file, and how they change at run time: -hotreload (a watch on
// each file's folder, so edits in place, renames over the file, symlink swaps as kubectl does for
// ConfigMaps, removal and re-creation are all seen) and SIGUSR1/SIGHUP (reload every file).
//
// The served set is one immutable Map, replaced in a single assignment after a file loaded
// cleanly; a request looks its hook up once, so it never sees half of a reload. A file that does
// not load keeps its previous hooks and the log says why.
import { watch, statSync, realpathSync, type FSWatcher } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Hook } from "./hook.js";
import { HooksFileError, parseHooks, readHooksFile, type LoadOptions } from "./config.js";
import type { Log } from "../log/log.js";
import { HookSet, matches } from "./hook-set.js";
import { MAX_FILE_BYTES, matchFiles } from "./match-files.js";
import { readSmallFile } from "../../shared/small-file.js";
import { type ErrorArgs, WebhookError } from "../errors.js";

/** How long after a change a file is read (writers write in pieces). */
const SETTLE_MS = 50;
/** How long a file must stay missing before its hooks are dropped (editors delete, then write). */
const REMOVAL_GRACE_MS = 500;

interface FileState {
  path: string;
  hooks: Hook[];
  /** The text last loaded (or seen invalid), to skip events that changed nothing. */
  text: string | undefined;
  /** Inode of the file last read: a new one means it was replaced rather than edited. */
  ino: number | undefined;
  present: boolean;
  /** When the file was first seen missing since it was last there. */
  missingSince: number | undefined;
  /** The files its hooks read (secret-file, ip-list-file), with their text then: a change reloads it. */
  deps: ReadonlyMap<string, string>;
}

export class HookRegistry {
  private current = new HookSet();
  private readonly files: FileState[];
  private readonly watchers = new Map<string, FSWatcher>();
  /** Per watched folder, the check scheduled after its last event. */
  private readonly pending = new Map<string, NodeJS.Timeout>();

  constructor(
    paths: string[],
    private readonly options: LoadOptions,
    private readonly log: Log,
    /** Called with the new served set after every change. */
    private readonly onChange: (hooks: HookSet) => void = () => undefined,
  ) {
    this.files = paths.map((path) => ({ path, hooks: [], text: undefined, ino: undefined, present: true, missingSince: undefined, deps: new Map() }));
  }

  /** How many hooks are served now. */
  get size(): number {
    return this.current.size;
  }

  /**
   * The start-up load, with the reference's messages. Returns the files that failed; throws
   * DuplicateHookError when a file defines an id an earlier file did (the reference stops then).
   */
  loadAll(): string[] {
    const failed: string[] = [];
    for (const f of this.files) {
      this.log.print(`attempting to load hooks from ${f.path}`);
      let hooks: Hook[];
      try {
        hooks = this.read(f);
      } catch (e) {
        if (!(e instanceof HooksFileError)) throw e;
        this.log.always(`couldn't load hooks from file! ${e.message}`);
        failed.push(f.path);
        continue;
      }
      this.log.print(`found ${hooks.length} hook(s) in file`);
      // As the reference: an id repeated within one file loads (the first is served); an id
      // loaded from an earlier file stops the start.
      for (const hook of hooks) {
        if (this.files.some((o) => o !== f && o.hooks.some((h) => h.id === hook.id))) {
          throw new DuplicateHookError("WEBHOOK_DUPLICATE_HOOK", { id: hook.id, path: f.path });
        }
        this.log.print(`\tloaded: ${hook.id}`);
      }
      f.hooks = hooks;
      f.deps = filesReadBy(hooks);
    }
    this.publish();
    return failed;
  }

  /** SIGUSR1 / SIGHUP: reload every hooks file that exists. */
  reloadAll(): void {
    for (const f of this.files) if (f.present) this.reload(f, true);
  }

  /** -hotreload: watch the folder of every hooks file (and of the file a symlink points to). */
  watch(): void {
    for (const f of this.files) this.log.print(`setting up file watcher for ${f.path}`);
    this.syncWatchers();
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    for (const t of this.pending.values()) clearTimeout(t);
    this.pending.clear();
  }

  private read(f: FileState): Hook[] {
    const text = readHooksFile(f.path);
    f.text = text;
    f.ino = inode(f.path);
    return parseHooks(f.path, text, this.options);
  }

  private publish(): void {
    const next = new Map<string, Hook>();
    for (const f of this.files) for (const h of f.hooks) if (!next.has(h.id)) next.set(h.id, h);
    this.current = new HookSet(next);
    this.onChange(this.current);
  }

  /**
   * Watches the folder of every hooks file and of the file each symlink resolves to (a ConfigMap's
   * current ..data folder), and stops watching folders no longer needed.
   */
  private syncWatchers(): void {
    const wanted = new Set<string>();
    for (const path of this.files.flatMap((f) => [f.path, ...f.deps.keys()])) {
      wanted.add(dirname(resolve(path)));
      try {
        wanted.add(dirname(realpathSync(path)));
      } catch {
        // Not there (yet): its own folder is enough to see it appear.
      }
    }
    for (const [folder, w] of this.watchers) {
      if (wanted.has(folder)) continue;
      w.close();
      this.watchers.delete(folder);
    }
    for (const folder of wanted) {
      if (this.watchers.has(folder)) continue;
      try {
        const w = watch(folder, { persistent: false }, () => this.changed(folder));
        w.on("error", (e) => this.log.print(`watcher error: ${e.message}`));
        this.watchers.set(folder, w);
      } catch (e) {
        this.log.always(`error adding hooks file to the watcher: ${(e as Error).message}`);
      }
    }
  }

  /**
   * Something changed in a watched folder: check the files a moment later. Events during that
   * moment are covered by the same check; one after it schedules another, so the last change is
   * always read, even while a file keeps changing.
   */
  private changed(folder: string, delayMs = SETTLE_MS): void {
    if (this.pending.has(folder)) return;
    const timer = setTimeout(() => {
      this.pending.delete(folder);
      for (const f of this.files) this.check(f);
      this.syncWatchers();
    }, delayMs);
    this.pending.set(folder, timer);
  }

  private check(f: FileState): void {
    let exists = true;
    try {
      statSync(f.path);
    } catch {
      exists = false;
    }
    if (!exists) {
      if (!f.present) return;
      f.missingSince ??= Date.now();
      const left = f.missingSince + REMOVAL_GRACE_MS - Date.now();
      if (left > 0) this.changed(dirname(resolve(f.path)), left);
      else this.remove(f);
      return;
    }
    f.missingSince = undefined;
    const wasPresent = f.present;
    f.present = true;
    if (!wasPresent) this.log.print(`hooks file ${f.path} created`);
    else if (inode(f.path) !== f.ino) this.log.print(`hooks file ${f.path} overwritten`);
    this.reload(f, !wasPresent);
  }

  private reload(f: FileState, force: boolean): void {
    let text: string;
    try {
      text = readHooksFile(f.path);
    } catch (e) {
      if (!(e instanceof HooksFileError)) throw e;
      this.log.print(`couldn't load hooks from file! ${e.message}`);
      return;
    }
    if (!force && text === f.text) {
      const changed = changedDeps(f);
      if (changed.length === 0) return;
      // Written in place, a file is empty for a moment: an empty list would let nobody in (write "#"
      // for that). Only when every change is such a moment: one file left empty must not keep
      // another's change (a secret revoked) from being read.
      const written = changed.filter((d) => d.text !== "");
      if (written.length === 0) {
        for (const dep of changed) this.log.print(`${dep.path}, read by hooks file ${f.path}, is empty; keeping its hooks until it is written`);
        return;
      }
      for (const dep of written) this.log.print(`${dep.path}, read by hooks file ${f.path}, changed`);
    } else if (!force) this.log.print(`hooks file ${f.path} modified`);
    this.log.print(`attempting to reload hooks from ${f.path}`);
    f.text = text;
    f.ino = inode(f.path);
    if (text.length === 0 && f.hooks.length > 0) {
      // A file written in place is empty for a moment; dropping every hook then would be wrong.
      this.log.print(`hooks file ${f.path} is empty; keeping its ${f.hooks.length} hook(s) (write [] to remove them, or delete the file)`);
      return;
    }
    let hooks: Hook[];
    try {
      hooks = parseHooks(f.path, text, this.options);
    } catch (e) {
      if (!(e instanceof HooksFileError)) throw e;
      this.log.print(`couldn't load hooks from file! ${e.message}`);
      this.log.print(`keeping the ${f.hooks.length} hook(s) loaded before from ${f.path}`);
      return;
    }
    this.log.print(`found ${hooks.length} hook(s) in file`);
    const seen = new Set<string>();
    for (const hook of hooks) {
      const elsewhere = this.files.some((o) => o !== f && o.hooks.some((h) => h.id === hook.id));
      if (elsewhere || seen.has(hook.id)) {
        this.log.print(`error: hook with the id ${hook.id} has already been loaded!\nplease check your hooks file for duplicate hooks ids!`);
        this.log.print("reverting hooks back to the previous configuration");
        return;
      }
      seen.add(hook.id);
      this.log.print(`\tloaded: ${hook.id}`);
    }
    f.hooks = hooks;
    f.deps = filesReadBy(hooks);
    this.publish();
  }

  private remove(f: FileState): void {
    f.present = false;
    f.missingSince = undefined;
    f.text = undefined;
    f.ino = undefined;
    this.log.print(`hooks file ${f.path} removed, removing hooks that were loaded from it`);
    for (const h of f.hooks) this.log.print(`\tremoving: ${h.id}`);
    const count = f.hooks.length;
    f.hooks = [];
    this.publish();
    this.log.print(`removed ${count} hook(s) that were loaded from file ${f.path}`);
  }
}

export class DuplicateHookError extends WebhookError {
  override readonly name = "DuplicateHookError";
  constructor(...args: ErrorArgs<"WEBHOOK_DUPLICATE_HOOK">) {
    super(...args);
  }
}

function inode(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/** The files the hooks' matches read (secret-file, ip-list-file), with the text read. */
function filesReadBy(hooks: Hook[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const h of hooks) for (const m of matches(h["trigger-rule"])) for (const [path, text] of matchFiles(m)) out.set(path, text);
  return out;
}

/** The files read by the hooks of `f` whose text is not what it was (or that are gone: undefined text), with their text now. */
function changedDeps(f: FileState): { path: string; text: string | undefined }[] {
  const out: { path: string; text: string | undefined }[] = [];
  for (const [path, was] of f.deps) {
    let text: string | undefined;
    try {
      text = readSmallFile(path, MAX_FILE_BYTES).toString("utf8");
    } catch {
      text = undefined;
    }
    if (text !== was) out.push({ path, text });
  }
  return out;
}
