// A real headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, with a fresh profile.
// Never downloads a browser: without /usr/bin/chromium the browser tests skip and say why.
import { existsSync } from "node:fs";
import { chromium, type BrowserContext } from "playwright-core";
import { eventually, removeDir, tempDir } from "../helpers.js";

export const CHROMIUM = process.env.FRAMEFI_CHROMIUM ?? "/usr/bin/chromium";

/** The reason to skip, or undefined when Chromium is there. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (install Debian's chromium package or set FRAMEFI_CHROMIUM); browser tests skipped`;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** `extraArgs`: more Chromium switches, e.g. --host-resolver-rules to point a name at 127.0.0.1. */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  const profile = await tempDir("framefi-chromium-");
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    hasTouch: true,
    viewport: { width: 900, height: 560 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...extraArgs,
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      await removeDir(profile);
    },
  };
}

/** Waits (generously) until what `read` finds on the page satisfies `ok`; the error says what the page shows. */
export async function untilShown<T>(read: () => Promise<T>, ok: (s: T) => boolean, timeoutMs: number): Promise<T> {
  let last: T | undefined;
  try {
    return (await eventually(async () => {
      last = await read();
      return ok(last) ? last : undefined;
    }, timeoutMs))!;
  } catch {
    throw new Error(`the page never showed what was expected; it shows ${JSON.stringify(last)}`);
  }
}
