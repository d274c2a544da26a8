// Makes the sample pictures in examples/pictures/: drawn here (SVG scenes rendered by sharp), so they are the project's own,
// under its licence. Each is a camera-sized 1600×1200 JPEG of well under 150 KB; mountain.jpg is stored as a camera
// held sideways stores it — its pixels turned a quarter and EXIF orientation 6 saying so — so the quickstart's sync
// shows a photo turned upright. moon.png is a PNG, to show another format made into a JPEG.
// Run from the repository's root: node examples/make-pictures.mjs
import sharp from "sharp";

const W = 1600;
const H = 1200;
const out = new URL("./pictures/", import.meta.url).pathname;

/** A scene as SVG: a sky gradient, and what stands in front of it. */
const svg = (defs, body) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"><defs>${defs}</defs>${body}</svg>`;

/** Soft texture, so that the pictures compress like photos rather than like drawings. */
const grain = (id, freq, opacity) =>
  `<filter id="${id}" x="0" y="0" width="100%" height="100%"><feTurbulence type="fractalNoise" baseFrequency="${freq}" numOctaves="3" seed="7"/>` +
  `<feColorMatrix type="matrix" values="0 0 0 0 1  0 0 0 0 1  0 0 0 0 1  0 0 0 ${opacity} 0"/><feComposite in2="SourceGraphic" operator="in"/></filter>`;

const sky = (id, top, bottom) => `<linearGradient id="${id}" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${top}"/><stop offset="1" stop-color="${bottom}"/></linearGradient>`;

const scenes = {
  "sunset.jpg": svg(
    sky("s", "#2d1b4e", "#f59e4c") + sky("w", "#f2a160", "#3a2350") + grain("g", 0.012, 0.18),
    `<rect width="${W}" height="${H}" fill="url(#s)"/><circle cx="1050" cy="700" r="120" fill="#ffd27a"/>` +
      `<path d="M0 760 Q300 600 620 720 T1200 700 T1600 690 V800 H0Z" fill="#3b2440"/>` +
      `<rect y="800" width="${W}" height="400" fill="url(#w)"/><rect x="960" y="810" width="180" height="300" fill="#ffd27a" opacity=".35"/>` +
      `<rect width="${W}" height="${H}" filter="url(#g)"/>`,
  ),
  "sea.jpg": svg(
    sky("s", "#5fa8e8", "#d8ecfa") + sky("w", "#2f7fb8", "#0f3b63") + grain("g", 0.02, 0.22),
    `<rect width="${W}" height="${H}" fill="url(#s)"/><ellipse cx="400" cy="260" rx="220" ry="60" fill="#fff" opacity=".8"/>` +
      `<ellipse cx="1150" cy="200" rx="260" ry="50" fill="#fff" opacity=".7"/><rect y="640" width="${W}" height="560" fill="url(#w)"/>` +
      `<path d="M880 620 L880 420 L980 600Z" fill="#fafafa"/><path d="M800 625 H1010 L980 650 H830Z" fill="#6b3b2a"/>` +
      `<rect width="${W}" height="${H}" filter="url(#g)"/>`,
  ),
  "forest.jpg": svg(
    sky("s", "#a9c7d8", "#e8efe6") + grain("g", 0.03, 0.25),
    `<rect width="${W}" height="${H}" fill="url(#s)"/><path d="M0 620 Q400 480 800 600 T1600 560 V1200 H0Z" fill="#7d9a78"/>` +
      Array.from({ length: 26 }, (_, i) => {
        const x = (i * 67) % W;
        const y = 760 + ((i * 53) % 180);
        const h = 260 + ((i * 37) % 160);
        return `<path d="M${x} ${y - h} L${x + 70} ${y} H${x - 70}Z" fill="${i % 2 ? "#1f4d2b" : "#2e6b3a"}"/>`;
      }).join("") +
      `<rect y="950" width="${W}" height="250" fill="#244a2a"/><rect width="${W}" height="${H}" filter="url(#g)"/>`,
  ),
  "mountain.jpg": svg(
    sky("s", "#3d7cc9", "#cfe3f5") + grain("g", 0.025, 0.22),
    `<rect width="${W}" height="${H}" fill="url(#s)"/><path d="M0 900 L420 380 L640 620 L900 260 L1250 700 L1600 480 V1200 H0Z" fill="#5b6577"/>` +
      `<path d="M340 480 L420 380 L500 480 L460 460 L420 500Z M810 380 L900 260 L990 390 L930 360 L880 410Z" fill="#f4f7fb"/>` +
      `<path d="M0 980 Q500 860 1000 960 T1600 930 V1200 H0Z" fill="#3f6b3c"/><rect width="${W}" height="${H}" filter="url(#g)"/>`,
  ),
};

for (const [name, scene] of Object.entries(scenes)) {
  let picture = sharp(Buffer.from(scene));
  // As a camera held sideways stores it: the pixels a quarter turn back, and EXIF orientation 6 to turn them upright.
  if (name === "mountain.jpg") picture = sharp(await picture.rotate(270).png().toBuffer()).withMetadata({ orientation: 6 });
  const info = await picture.jpeg({ quality: 80, mozjpeg: true }).toFile(out + name);
  console.log(name, `${info.width}×${info.height}`, `${Math.round(info.size / 1024)} KB`);
}

const moon = svg(
  sky("s", "#0b1026", "#1c2448") + grain("g", 0.04, 0.15),
  `<rect width="${W}" height="${H}" fill="url(#s)"/><circle cx="800" cy="600" r="330" fill="#e9e4d4"/>` +
    `<circle cx="700" cy="520" r="60" fill="#cfc8b4"/><circle cx="900" cy="700" r="85" fill="#d6cfbb"/><circle cx="860" cy="470" r="35" fill="#cbc4af"/>`,
);
const info = await sharp(Buffer.from(moon)).resize(800, 600).png({ palette: true, colours: 64 }).toFile(out + "moon.png");
console.log("moon.png", `${info.width}×${info.height}`, `${Math.round(info.size / 1024)} KB`);
