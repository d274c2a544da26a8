// sharp, loaded on first use: libvips takes tens of milliseconds to load (about 100 ms of a framefi command's
// start here), which a command or a sync without photos to read or convert need not pay.

export type SharpFn = typeof import("sharp").default;

export async function loadSharp(): Promise<SharpFn> {
  return (await import("sharp")).default;
}
