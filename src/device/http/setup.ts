// The Wi-Fi setup page the device serves from its own access point after a Wi-Fi reset, shaped like the
// firmware's WiFiManager portal: network name and password, FTP, web and MQTT settings, saved by /wifisave.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Settings } from "../settings.js";
import { MALFORMED_URL, requestUrl, sendErrorAndClose } from "./answers.js";

/** What a saved form changes: only the fields it sent (a blank password field keeps the stored password). */
export type SetupValues = Partial<Settings>;

export interface SetupContext {
  apSsid: string;
  settings: () => Settings;
  /** Stores the values (rejects when they cannot be written). */
  store: (values: SetupValues) => Promise<void>;
  /** Whether `password` is the web password in effect (compared in constant time). */
  /**
   * Checks the current web password sent from `address` through the device's one login throttle: "ok", "wrong"
   * (counted as a failed login), or the milliseconds the address must wait first.
   */
  checkWebPassword: (password: string, address: string | undefined) => "ok" | "wrong" | { retryAfterMs: number };
  /** Restarts into normal mode; called once the answer has been sent. */
  restart: () => void;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:sans-serif;max-width:420px;margin:1em auto;padding:0 1em}label{display:block;margin-top:.6em}
input{width:100%;padding:.4em;box-sizing:border-box}button{margin-top:1em;width:100%;padding:.6em}.err{color:#b00}</style>
<script>function f2(id){var x=document.getElementById(id);x.type==='password'?x.type='text':x.type='password';}</script>
</head><body>${body}</body></html>`;
}

function field(name: string, label: string, value: string, opts: { password?: boolean; maxlength: number }): string {
  const type = opts.password ? "password" : "text";
  const toggle = opts.password ? `<label><input type="checkbox" style="width:auto" onclick="f2('${name}')"> Show Password</label>` : "";
  return `<label for="${name}">${escapeHtml(label)}</label><input id="${name}" name="${name}" type="${type}" maxlength="${opts.maxlength}" value="${escapeHtml(value)}">${toggle}`;
}

export function setupForm(ctx: SetupContext, error = ""): string {
  const s = ctx.settings();
  return page(
    "FrameFi Setup",
    `<h1>FrameFi Setup</h1><p>Access point <b>${escapeHtml(ctx.apSsid)}</b>. Choose the Wi-Fi network FrameFi joins.</p>
${error ? `<p class="err">${escapeHtml(error)}</p>` : ""}
<p>Blank password fields keep the stored passwords (a new MQTT host or port gets none).</p>
<form method="POST" action="/wifisave">
${field("s", "SSID", "", { maxlength: 32 })}
${field("p", "Password", "", { password: true, maxlength: 64 })}
<br/><hr><br/>
${field("ftp_user", "FTP User", s.ftpUser, { maxlength: 32 })}
${field("ftp_pass", "FTP Password", "", { password: true, maxlength: 32 })}
<br/><hr><br/>
${field("web_user", "Web User", s.webUser, { maxlength: 32 })}
${field("web_pass", "Web Password", "", { password: true, maxlength: 32 })}
${webLoginSet(s) ? field(CURRENT_WEB_PASS, "Current Web Password (needed to change the web, FTP or MQTT login)", "", { password: true, maxlength: 64 }) : ""}
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

const CURRENT_WEB_PASS = "web_pass_current";

const webLoginSet = (s: Settings): boolean => s.webUser !== "" || s.webPassword !== "";

/** Reads an application/x-www-form-urlencoded body of at most 16 KiB. */
function readForm(req: IncomingMessage): Promise<URLSearchParams> {
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

/** `needsWebPassword`: the form changes a login while a web login is set, so the current web password must hold. */
export type FormCheck = { values: SetupValues; needsWebPassword: boolean } | { error: string; status: 400 };

/** The login fields: changing one of them in setup mode needs the current web password when a web login is set. */
const LOGINS = ["webUser", "webPassword", "ftpUser", "ftpPassword", "mqttUser", "mqttPassword"] as const;

/**
 * Validates a form of WiFiManager's fields. What the form does not send is kept, and so is what a blank password
 * field would clear, except that a stored MQTT password never goes to a broker it was not given for: a new MQTT
 * host or port with the password left blank means no password. `wifi`: the network name is required (/wifisave)
 * or ignored (/paramsave). Changing a web, FTP or MQTT login that was set needs the current web password.
 */
export function parseSetupForm(form: URLSearchParams, current: Settings, wifi: boolean): FormCheck {
  const bad = (error: string): FormCheck => ({ error, status: 400 });
  const text = (k: string): string | undefined => (form.has(k) ? form.get(k)!.trim() : undefined);
  const secret = (k: string): string | undefined => (form.get(k) ? form.get(k)! : undefined);
  const values: SetupValues = {};
  if (wifi) {
    const ssid = text("s") ?? "";
    if (!ssid) return bad("Enter the name (SSID) of the Wi-Fi network.");
    if (ssid.length > 32) return bad("The network name is longer than 32 characters.");
    values.wifiSsid = ssid;
    values.wifiPassword = form.get("p") ?? "";
  }
  const portText = text("mqtt_port");
  if (portText !== undefined && portText !== "") {
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) return bad("The MQTT port must be a number between 1 and 65535.");
    values.mqttPort = port;
  }
  for (const k of ["ftp_user", "ftp_pass", "web_user", "web_pass", "mqtt_client_id", "mqtt_user", "mqtt_pass"]) {
    if ((form.get(k) ?? "").trim().length > 32) return bad(`The field ${k} is longer than 32 characters.`);
  }
  if ((text("mqtt_host") ?? "").length > 64) return bad("The field mqtt_host is longer than 64 characters.");
  const set = <K extends keyof Settings>(key: K, value: Settings[K] | undefined): void => {
    if (value !== undefined) values[key] = value;
  };
  set("ftpUser", text("ftp_user") || undefined);
  set("ftpPassword", secret("ftp_pass"));
  set("mqttClientId", text("mqtt_client_id") || undefined);
  set("mqttHost", text("mqtt_host"));
  set("mqttUser", text("mqtt_user"));
  set("mqttPassword", secret("mqtt_pass"));
  const webUser = text("web_user");
  set("webUser", webUser);
  // A blank user with the password field left blank means no login at all, as blank flags do.
  set("webPassword", secret("web_pass") ?? (webUser === "" && current.webUser !== "" ? "" : undefined));
  // User names sent back as stored change nothing (and need no password). A password field is never filled in, so
  // any password sent is a change: were an equal one let through, the answer would tell a right guess from a wrong one.
  for (const key of ["webUser", "ftpUser", "mqttUser"] as const) {
    if (values[key] !== undefined && values[key] === current[key]) delete values[key];
  }
  const needsWebPassword = LOGINS.some((key) => values[key] !== undefined) && webLoginSet(current);
  const movesBroker =
    (values.mqttHost !== undefined && values.mqttHost !== current.mqttHost) || (values.mqttPort !== undefined && values.mqttPort !== current.mqttPort);
  if (movesBroker && values.mqttPassword === undefined && current.mqttPassword !== "") values.mqttPassword = "";
  return { values, needsWebPassword };
}

export function createSetupHandler(ctx: SetupContext): (req: IncomingMessage, res: ServerResponse) => void {
  let saving = false;
  const save = async (req: IncomingMessage, res: ServerResponse, wifi: boolean): Promise<void> => {
    let form: URLSearchParams;
    try {
      form = await readForm(req);
    } catch (e) {
      sendHtml(res, 400, setupForm(ctx, (e as Error).message), { Connection: "close" });
      return;
    }
    const checked = parseSetupForm(form, ctx.settings(), wifi);
    if ("error" in checked) {
      sendHtml(res, checked.status, setupForm(ctx, checked.error));
      return;
    }
    if (checked.needsWebPassword) {
      const login = ctx.checkWebPassword(form.get(CURRENT_WEB_PASS) ?? "", req.socket.remoteAddress);
      if (typeof login === "object") {
        const seconds = Math.ceil(login.retryAfterMs / 1000);
        sendHtml(res, 429, setupForm(ctx, `Too many wrong web passwords from this address: try again in ${seconds} s.`), { "Retry-After": String(seconds) });
        return;
      }
      if (login === "wrong") {
        sendHtml(
          res,
          403,
          setupForm(ctx, "A web login is set: enter the current web password to change the web, FTP or MQTT login, or leave those fields as they are."),
        );
        return;
      }
    }
    if (saving) {
      sendHtml(res, 409, page("FrameFi Setup", "<p>Settings are already being saved; FrameFi is restarting.</p>"));
      return;
    }
    saving = wifi;
    try {
      await ctx.store(checked.values);
    } catch (e) {
      saving = false;
      sendHtml(res, 500, setupForm(ctx, `The settings could not be saved (${(e as Error).message}). Try again.`));
      return;
    }
    if (!wifi) {
      sendHtml(res, 200, page("FrameFi Setup", `<h1>Saved</h1><p>The settings are stored. <a href="/">Back to the Wi-Fi setup</a>.</p>`));
      return;
    }
    res.once("finish", ctx.restart);
    sendHtml(
      res,
      200,
      page(
        "FrameFi Setup",
        `<h1>Credentials saved</h1><p>FrameFi is joining <b>${escapeHtml(checked.values.wifiSsid ?? "")}</b> and restarting; its web API answers on its usual address in a moment.</p>`,
      ),
    );
  };
  return (req, res) => {
    const url = requestUrl(req);
    if (!url) {
      sendErrorAndClose(req, res, 400, MALFORMED_URL);
      return;
    }
    const path = url.pathname;
    if (req.method === "GET" && (path === "/" || path === "/wifi" || path === "/0wifi" || path === "/param")) {
      sendHtml(res, 200, setupForm(ctx));
      return;
    }
    if (path === "/wifisave" || path === "/paramsave") {
      if (req.method !== "POST") {
        // A GET could come from any <img> on any page: saving takes a POST of the form.
        sendHtml(res, 405, setupForm(ctx, "Settings are saved with the form's Save button (a POST), not by opening an address."), {
          Allow: "POST",
          Connection: "close",
        });
        req.resume();
        return;
      }
      void save(req, res, path === "/wifisave");
      return;
    }
    // A captive portal sends every other address to the form.
    res.writeHead(302, { Location: "/", "Content-Length": 0 });
    res.end();
    req.resume();
  };
}
