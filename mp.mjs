import { request } from "node:http";
import { readFileSync } from "node:fs";
const [port, pid, kind] = process.argv.slice(2);
const hwm = () => readFileSync(`/proc/${pid}/status`, "utf8").match(/VmHWM:\s+(\d+)/)[1] / 1024 | 0;
const B = "X";
function body(kind) {
  const MB = 9.5 * 1024 * 1024;
  if (kind === "qp1line") return Buffer.concat([Buffer.from(`--X\r\nContent-Disposition: form-data; name="a"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n`), Buffer.alloc(MB, "a"), Buffer.from("\r\n--X--\r\n")]);
  if (kind === "qplines") return Buffer.concat([Buffer.from(`--X\r\nContent-Disposition: form-data; name="a"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n`), Buffer.from("=\n".repeat(MB / 2)), Buffer.from("\r\n--X--\r\n")]);
  if (kind === "headers") { let parts = []; for (let p = 0; p < 999; p++) parts.push(`--X\r\nContent-Disposition: form-data; name="f"; filename="x"\r\n` + "a:\r\n".repeat(9000) + "\r\nv\r\n"); return Buffer.from(parts.join("") + "--X--\r\n"); }
  if (kind === "headers1") { return Buffer.from(`--X\r\nContent-Disposition: form-data; name="f"\r\n` + "a:b\r\n".repeat(2_000_000) + "\r\nv\r\n--X--\r\n"); }
  if (kind === "fold") { return Buffer.from(`--X\r\nContent-Disposition: form-data; name="f"\r\nA: b\r\n` + " x\r\n".repeat(2_400_000) + "\r\nv\r\n--X--\r\n"); }
  if (kind === "nearboundary") return Buffer.from(`--X\r\nContent-Disposition: form-data; name="a"\r\n\r\n` + "\r\n--Xz".repeat(1_900_000) + "\r\n--X--\r\n");
  if (kind === "params") return Buffer.from(`--X\r\nContent-Disposition: form-data; name="a"` + Array.from({length: 400000}, (_, i) => `; p*${i}=v`).join("") + "\r\n\r\nv\r\n--X--\r\n");
  if (kind === "parts") return Buffer.from(`--X\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n`.repeat(999) + "--X--\r\n");
}
const b = body(kind);
const t = Date.now();
const req = request({ port, method: "POST", path: "/hooks/a", headers: { "content-type": "multipart/form-data; boundary=X", "content-length": b.length } }, (res) => {
  let txt = ""; res.on("data", (d) => (txt += d)); res.on("end", () => console.log(kind, b.length, res.statusCode, txt.slice(0, 80), Date.now() - t, "ms", "hwm", hwm(), "MB"));
});
req.on("error", (e) => console.log(kind, "error", e.message, Date.now() - t));
req.end(b);
