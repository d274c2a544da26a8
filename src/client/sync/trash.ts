// --trash DAYS: what --delete removes is moved to `.trash/<when>/` at the top of the sync's folder on the card
// instead (a dot-name, which frames skip), and kept DAYS days; each sync with --trash removes the older ones. On a
// card with less than a tenth free, files are deleted as before: a trash must not fill the frame.
import type { FrameFiClient } from "../api/index.js";
import { remoteJoin, type CardPool, type RemoteConnection } from "../ftp/remote.js";
import { listCard, TRASH } from "./card-tree.js";

/** A trash folder's name: when its files were removed, UTC, "20261128T140800". */
const STAMP = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)$/;

export function trashStamp(now: Date): string {
  return now.toISOString().replace(/[-:]/g, "").slice(0, 15);
}

/** Whether the card has room to keep what is removed: a tenth of it free. */
export async function roomForTrash(client: FrameFiClient): Promise<boolean> {
  const card = (await client.status()).sd_card;
  return card.free_size > card.total_size / 10;
}

/** Removes the trash folders older than `days`; what else is in .trash is left alone. */
export async function emptyTrash(
  pool: CardPool<RemoteConnection>,
  root: string,
  days: number,
  now: Date,
  withReconnect: <T>(conn: RemoteConnection, fn: () => Promise<T>) => Promise<T>,
): Promise<number> {
  const trash = remoteJoin(root, TRASH);
  const old: string[] = [];
  await pool.each([trash], async (conn) => {
    const entries = await withReconnect(conn, () => conn.list(trash)).catch(() => new Map());
    for (const [name, e] of entries) {
      const m = STAMP.exec(name);
      if (e.type !== "dir" || !m) continue;
      const at = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
      if (now.getTime() - at > days * 86_400_000) old.push(remoteJoin(trash, name));
    }
  });
  for (const dir of old) {
    const { tree } = await listCard(pool, dir, withReconnect);
    const files = [...tree].filter(([, e]) => e.type === "file").map(([rel]) => remoteJoin(dir, rel));
    const dirs = [...tree].filter(([, e]) => e.type === "dir").map(([rel]) => remoteJoin(dir, rel));
    await pool.each(files, (conn, path) => withReconnect(conn, () => conn.removeFile(path)));
    for (const d of [...dirs.sort((a, b) => b.split("/").length - a.split("/").length), dir]) {
      await pool.each([d], (conn, path) => withReconnect(conn, () => conn.removeDir(path)));
    }
  }
  return old.length;
}
