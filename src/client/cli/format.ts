// Human-readable renderings of the device's answers and of sizes, rates and durations.
import { MQTT_STATES, type DeviceStatus, type LedStatus, type MqttStatus } from "../../shared/firmware.js";

/** Bytes as decimal gigabytes, as card makers count them: "7.99 GB". */
export function gigabytes(bytes: number): string {
  return `${(bytes / 1e9).toFixed(2)} GB`;
}

/** Bytes with a unit that keeps the number short: "512 B", "200.0 kB", "1.5 MB", "3.21 GB". */
export function bytes(n: number): string {
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} kB`;
  if (n < 1e9) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e9).toFixed(2)} GB`;
}

/** Seconds as m:ss or h:mm:ss. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/** The MQTT state code with its PubSubClient name: "MQTT_CONNECTED (0)". */
export function mqttStateName(code: number): string {
  return `${MQTT_STATES[code] ?? "unknown state"} (${code})`;
}

function mqttLine(enabled: boolean, connected: boolean, state: number): string {
  const link = connected ? "connected" : "not connected";
  return enabled ? `enabled, ${link}, ${mqttStateName(state)}` : `disabled, ${mqttStateName(state)}`;
}

export function statusSummary(s: DeviceStatus): string {
  const card = s.sd_card;
  const files = `${card.file_count} file${card.file_count === 1 ? "" : "s"}`;
  return [
    `Mode:     ${s.mode}`,
    `Display:  ${s.display.status} (orientation ${s.display.orientation})`,
    `SD card:  ${gigabytes(card.used_size)} used of ${gigabytes(card.total_size)}, ${gigabytes(card.free_size)} free, ${files}`,
    `MQTT:     ${mqttLine(s.mqtt.enabled, s.mqtt.connected, s.mqtt.state)}`,
    `LED:      ${ledLine(s.led.state, s.led.color, s.led.brightness)}`,
  ].join("\n");
}

export function mqttSummary(m: MqttStatus): string {
  return `MQTT ${mqttLine(m.mqtt_enabled, m.mqtt_connected, m.mqtt_state)}`;
}

/** "on, green, brightness 13"; an LED that is off has no colour to tell (the firmware reports "off"). */
function ledLine(state: string, color: string, brightness: number): string {
  return state === "off" ? `off, brightness ${brightness}` : `${state}, ${color}, brightness ${brightness}`;
}

export function ledSummary(l: LedStatus): string {
  return `LED ${ledLine(l.state, l.color, l.brightness)}`;
}
