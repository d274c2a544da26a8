/** Where `framefi sync --trash` keeps what a sync removed, under the sync's folder on the card; the device hides it from frames. */
export const TRASH = ".trash";
