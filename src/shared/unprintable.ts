// What a program must never print as it came (from a device, a broker, an FTP or web client): C0 and C1 controls
// and DEL, which a terminal obeys as escape sequences (title, screen, cursor), and the bidirectional overrides that
// reorder what a line shows. One class for every program, so that a gap closed in one is closed in all.
export const UNPRINTABLE = /[\0-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
