// The card's tree below the sync's folder, listed folder by folder over the pool's connections, within bounds: a
// server may list a folder that nests forever, or one that holds millions of entries. Links are not followed: what
// a server marks as one (MLSD type=OS.unix=symlink, cdir/pdir) is dropped by the listing's parser, and a folder
// that lists exactly as a folder above it, all the way down, is a link back to it (our device lists a link that
// stays on the card as the folder it leads to) and is left out.
import { createHash } from "node:crypto";
import { FrameFiError } from "../errors.js";
import { type CardPool, isReply, MAX_ENTRIES, replyCode, type RemoteConnection, type RemoteEntry, remoteJoin } from "../ftp/remote.js";

import { TRASH } from "../../shared/trash-folder.js";

export { TRASH };

/** Folder levels below the sync's folder: a FAT path of 255 characters holds at most ~128. */
export const MAX_DEPTH = 32;
/** Files and folders in all (each listing is held to it as it streams in). */
export { MAX_ENTRIES };

export interface CardTree {
  tree: Map<string, RemoteEntry>;
  rootMissing: boolean;
  /** Folders left out as links back to a folder above them: [the link, where it leads]. */
  loops: [string, string][];
}

type Listing = Map<string, RemoteEntry>;
type List = (rel: string) => Promise<Listing>;

const segments = (rel: string): string[] => (rel === "" ? [] : rel.split("/"));

/** What identifies a listing: its names, types, sizes and times. */
function fingerprint(listing: Listing): string {
  const hash = createHash("sha1");
  for (const [name, e] of [...listing].sort(([a], [b]) => (a < b ? -1 : 1))) hash.update(`${name}\0${e.type}\0${e.size}\0${e.mtimeMs}\n`);
  return hash.digest("base64");
}

/**
 * Whether `rel`, which lists as its ancestor `above` does, is a link back to it: the folders along the same names
 * keep listing as their counterparts one loop up, down to MAX_DEPTH (a real tree that deep and that regular does
 * not happen), or the server refuses to go deeper along them.
 */
async function leadsBack(list: List, known: ReadonlyMap<string, string>, above: string, rel: string, print: string): Promise<boolean> {
  const loop = segments(rel).slice(segments(above).length);
  const walked = new Map([[rel, print]]);
  let at = rel;
  for (let i = 0; segments(at).length < MAX_DEPTH; i++) {
    const next = `${at}/${loop[i % loop.length]}`;
    const counterpart = segments(next);
    counterpart.splice(segments(above).length, loop.length);
    let listing: Listing;
    try {
      listing = await list(next);
    } catch (e) {
      if (isReply(e)) return true;
      throw e;
    }
    const found = fingerprint(listing);
    const key = counterpart.join("/");
    if (found !== (walked.get(key) ?? known.get(key))) return false;
    walked.set(next, found);
    at = next;
  }
  return true;
}

export async function listCard(
  pool: CardPool<RemoteConnection>,
  root: string,
  withReconnect: <T>(conn: RemoteConnection, fn: () => Promise<T>) => Promise<T>,
): Promise<CardTree> {
  const tree = new Map<string, RemoteEntry>();
  const prints = new Map<string, string>();
  const loops: [string, string][] = [];
  let rootMissing = false;
  let failure: Error | undefined;
  let level = [""];
  while (level.length > 0) {
    const next: string[] = [];
    await pool.each(level, async (conn, rel) => {
      const list: List = (at) => withReconnect(conn, () => conn.list(remoteJoin(root, at)));
      try {
        const entries = await list(rel);
        const print = fingerprint(entries);
        // The nearest folder above that lists the same.
        const above = segments(rel)
          .map((_, i, all) => all.slice(0, i).join("/"))
          .reverse()
          .find((a) => prints.get(a) === print);
        if (above !== undefined && (await leadsBack(list, prints, above, rel, print))) {
          tree.delete(rel);
          loops.push([rel, above]);
          return;
        }
        prints.set(rel, print);
        for (const [name, entry] of entries) {
          // A name no FTP command could address (a "/", or a CR or NUL that would split the command line).
          if (/[/\r\0]/.test(name) || (rel === "" && name === TRASH)) continue;
          const child = rel === "" ? name : `${rel}/${name}`;
          tree.set(child, entry);
          if (entry.type === "dir") next.push(child);
        }
        if (tree.size > MAX_ENTRIES) {
          failure ??= new FrameFiError("FRAMEFI_CARD_TOO_LARGE", { entries: MAX_ENTRIES, root });
        }
      } catch (e) {
        if (replyCode(e) === 550 && rel === "") rootMissing = true;
        else if (e instanceof FrameFiError && e.code === "FRAMEFI_CARD_TOO_LARGE") failure ??= new FrameFiError(e.code, { entries: MAX_ENTRIES, root });
        else failure ??= new FrameFiError("FRAMEFI_CARD_UNLISTABLE", { path: remoteJoin(root, rel), reason: (e as Error).message }, { cause: e });
        // A broken connection leaves the pool; the folder is not lost with it: the sync stops below.
        if (!isReply(e)) throw e;
      }
    });
    if (failure) throw failure;
    level = next.sort();
    const deep = level.find((rel) => segments(rel).length > MAX_DEPTH);
    if (deep) {
      throw new FrameFiError("FRAMEFI_CARD_TOO_DEEP", { levels: MAX_DEPTH, root, path: remoteJoin(root, deep).slice(0, 80) });
    }
  }
  return { tree, rootMissing, loops };
}
