// The Wi-Fi setup page the device serves from its own access point after a Wi-Fi reset, shaped like the
// firmware's WiFiManager portal: network name and password, FTP, web and MQTT settings, saved by /wifisave.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Settings } from "./settings.js";

export interface SetupValues {
  wifiSsid: string;
  wifiPassword: string;
  ftpUser: string;
  ftpPassword: string;
  webUser: string;
  webPassword: string;
  mqttClientId: string;
  mqttHost: string;
  mqttPort: number;
  mqttUser: string;
  mqttPassword: string;
}

export interface SetupContext {
  apSsid: string;
  settings: () => Settings;
  /** Stores the values (rejects when they cannot be written). */
  store: (values: SetupValues) => Promise<void>;
  /** Restarts into normal mode; called once the answer has been sent. */
  restart: () => void;
}

const escape = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escape(title)}</title>
<style>body{font-family:sans-serif;max-width:420px;margin:1em auto;padding:0 1em}label{display:block;margin-top:.6em}
input{width:100%;padding:.4em;box-sizing:border-box}button{margin-top:1em;width:100%;padding:.6em}.err{color:#b00}</style>
<script>function f2(id){var x=document.getElementById(id);x.type==='password'?x.type='text':x.type='password';}</script>
</head><body>${body}</body></html>`;
}

function field(name: string, label: string, value: string, opts: { password?: boolean; maxlength: number }): string {
  const type = opts.password ? "password" : "text";
  const toggle = opts.password
    ? `<label><input type="checkbox" style="width:auto" onclick="f2('${name}')"> Show Password</label>`
    : "";
  return `<label for="${name}">${escape(label)}</label><input id="${name}" name="${name}" type="${type}" maxlength="${opts.maxlength}" value="${escape(value)}">${toggle}`;
}

export function setupForm(ctx: SetupContext, error = ""): string {
  const s = ctx.settings();
  return page(
    "FrameFi Setup",
    `<h1>FrameFi Setup</h1><p>Access point <b>${escape(ctx.apSsid)}</b>. Choose the Wi-Fi network FrameFi joins.</p>
${error ? `<p class="err">${escape(error)}</p>` : ""}
<form method="POST" action="/wifisave">
${field("s", "SSID", "", { maxlength: 32 })}
${field("p", "Password", "", { password: true, maxlength: 64 })}
<br/><hr><br/>
${field("ftp_user", "FTP User", s.ftpUser, { maxlength: 32 })}
${field("ftp_pass", "FTP Password", "", { password: true, maxlength: 32 })}
<br/><hr><br/>
${field("web_user", "Web User", s.webUser, { maxlength: 32 })}
${field("web_pass", "Web Password", "", { password: true, maxlength: 32 })}
<br/><hr><br/>
${field("mqtt_client_id", "MQTT Client ID", s.mqttClientId, { maxlength: 32 })}
${field("mqtt_host", "MQTT Host", s.mqttHost, { maxlength: 64 })}
${field("mqtt_port", "MQTT Port", String(s.mqttPort), { maxlength: 6 })}
${field("mqtt_user", "MQTT User", s.mqttUser, { maxlength: 32 })}
${field("mqtt_pass", "MQTT Password", "", { password: true, maxlength: 32 })}
<button type="submit">Save</button>
</form>`,
  );
}

function sendHtml(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "Content-Type": "text/html; charset=utf-8", "Content-Length": Buffer.byteLength(html), ...headers });
  res.end(html);
}

function readForm(req: IncomingMessage, url: URL): Promise<URLSearchParams> {
  if (req.method !== "POST") return Promise.resolve(url.searchParams);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= 16 * 1024) chunks.push(c);
    });
    req.on("end", () => {
      if (size > 16 * 1024) reject(new Error("The form is too large."));
      else resolve(new URLSearchParams(Buffer.concat(chunks).toString("utf8")));
    });
    req.on("error", reject);
  });
}

/** Validates the form; returns the values or an error message for the user. */
export function parseSetupForm(form: URLSearchParams, current: Settings): SetupValues | string {
  const get = (k: string): string => (form.get(k) ?? "").trim();
  const ssid = get("s");
  if (!ssid) return "Enter the name (SSID) of the Wi-Fi network.";
  if (ssid.length > 32) return "The network name is longer than 32 characters.";
  const portText = get("mqtt_port");
  const port = portText === "" ? current.mqttPort : Number(portText);
  if (!/^\d*$/.test(portText) || !Number.isInteger(port) || port < 1 || port > 65535) return "The MQTT port must be a number between 1 and 65535.";
  for (const k of ["ftp_user", "ftp_pass", "web_user", "web_pass", "mqtt_client_id", "mqtt_user", "mqtt_pass"]) {
    if (get(k).length > 32) return `The field ${k} is longer than 32 characters.`;
  }
  return {
    wifiSsid: ssid,
    wifiPassword: form.get("p") ?? "",
    ftpUser: get("ftp_user") || current.ftpUser,
    ftpPassword: form.get("ftp_pass") || current.ftpPassword,
    webUser: get("web_user"),
    webPassword: form.get("web_pass") ?? "",
    mqttClientId: get("mqtt_client_id") || current.mqttClientId,
    mqttHost: get("mqtt_host"),
    mqttPort: port,
    mqttUser: get("mqtt_user"),
    mqttPassword: form.get("mqtt_pass") ?? "",
  };
}

export function createSetupHandler(ctx: SetupContext): (req: IncomingMessage, res: ServerResponse) => void {
  let saving = false;
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://setup");
    const path = url.pathname;
    if (req.method === "GET" && (path === "/" || path === "/wifi" || path === "/0wifi" || path === "/param")) {
      sendHtml(res, 200, setupForm(ctx));
      return;
    }
    if (path === "/wifisave" && (req.method === "POST" || req.method === "GET")) {
      readForm(req, url).then(
        async (form) => {
          const parsed = parseSetupForm(form, ctx.settings());
          if (typeof parsed === "string") {
            sendHtml(res, 400, setupForm(ctx, parsed));
            return;
          }
          if (saving) {
            sendHtml(res, 409, page("FrameFi Setup", "<p>Settings are already being saved; FrameFi is restarting.</p>"));
            return;
          }
          saving = true;
          try {
            await ctx.store(parsed);
          } catch (e) {
            saving = false;
            sendHtml(res, 500, setupForm(ctx, `The settings could not be saved (${(e as Error).message}). Try again.`));
            return;
          }
          res.once("finish", ctx.restart);
          sendHtml(
            res,
            200,
            page("FrameFi Setup", `<h1>Credentials saved</h1><p>FrameFi is joining <b>${escape(parsed.wifiSsid)}</b> and restarting; its web API answers on its usual address in a moment.</p>`),
          );
        },
        (e: Error) => sendHtml(res, 400, setupForm(ctx, e.message)),
      );
      return;
    }
    // A captive portal sends every other address to the form.
    res.writeHead(302, { Location: "/", "Content-Length": 0 });
    res.end();
    req.resume();
  };
}
