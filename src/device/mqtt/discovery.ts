// Home Assistant MQTT discovery: the retained config messages that make a frame appear in Home Assistant
// as one device (sensors, display switch, mode select, restart button) without any YAML.
// See https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery.
import { MODE_FTP } from "../../shared/firmware.js";

/** The topics one frame uses, all under its topic prefix. */
export interface MqttTopics {
  /** Retained JSON state, as the firmware publishes it. */
  state: string;
  /** Retained `ON` / `OFF`. */
  displayStatus: string;
  /** Commands `ON` / `OFF` (the firmware's). */
  displaySet: string;
  /** Commands `ftp` / `msc`. */
  modeSet: string;
  /** Command `RESTART`. */
  restart: string;
  /** Retained `online` / `offline`, with `offline` as the last will. */
  availability: string;
  /** With --pull: the last pull as retained JSON (time, ok, uploaded, deleted, unchanged, failed, error). */
  pull: string;
  /** With --pull: command `PRESS` pulls now. */
  pullSet: string;
  /** Retained: the collection the frame has (--collections). */
  collection: string;
  /** Commands: a collection's name. */
  collectionSet: string;
}

export function topicsFor(prefix: string): MqttTopics {
  return {
    state: `${prefix}/state`,
    displayStatus: `${prefix}/display/status`,
    displaySet: `${prefix}/display/set`,
    modeSet: `${prefix}/mode/set`,
    restart: `${prefix}/restart`,
    availability: `${prefix}/status`,
    pull: `${prefix}/pull`,
    pullSet: `${prefix}/pull/set`,
    collection: `${prefix}/collection`,
    collectionSet: `${prefix}/collection/set`,
  };
}

export interface DiscoveryMessage {
  topic: string;
  config: Record<string, unknown>;
}

export interface DiscoveryOptions {
  topics: MqttTopics;
  topicPrefix: string;
  discoveryPrefix: string;
  deviceName: string;
  swVersion: string;
  /** The device pulls its photos (--pull): a "Last pull" sensor and a "Sync now" button. */
  pull: boolean;
  /** The collections' names, when the frame has some: a select switches between them. */
  collections?: string[] | undefined;
}

/** Discovery ids allow only [a-zA-Z0-9_-]; the topic prefix names the frame, so it makes the id. */
export function nodeIdFor(topicPrefix: string): string {
  return topicPrefix.replace(/[^a-zA-Z0-9_-]+/g, "_").replace(/^_+|_+$/g, "") || "frame-fi";
}

const GIB = 1024 * 1024 * 1024;
const MODE_OPTION = `{{ 'ftp' if value_json.mode == '${MODE_FTP}' else 'msc' }}`;

export function discoveryMessages(o: DiscoveryOptions): DiscoveryMessage[] {
  const nodeId = nodeIdFor(o.topicPrefix);
  const common = {
    availability_topic: o.topics.availability,
    payload_available: "online",
    payload_not_available: "offline",
    device: {
      identifiers: [nodeId],
      name: o.deviceName,
      manufacturer: "FrameFi",
      model: "FrameFi device service",
      sw_version: o.swVersion,
    },
    origin: { name: "framefi-device", sw_version: o.swVersion },
  };
  const entity = (component: string, objectId: string, config: Record<string, unknown>): DiscoveryMessage => ({
    topic: `${o.discoveryPrefix}/${component}/${nodeId}/${objectId}/config`,
    config: { ...config, unique_id: `${nodeId}_${objectId}`, ...common },
  });
  const size = (objectId: string, name: string, field: string): DiscoveryMessage =>
    entity("sensor", objectId, {
      name,
      state_topic: o.topics.state,
      value_template: `{{ (value_json.sd_card.${field} / ${GIB}) | round(2) }}`,
      unit_of_measurement: "GiB",
      device_class: "data_size",
      state_class: "measurement",
      icon: "mdi:sd",
    });

  const pull = o.pull
    ? [
        entity("sensor", "last_pull", {
          name: "Last pull",
          state_topic: o.topics.pull,
          value_template: "{{ value_json.time }}",
          json_attributes_topic: o.topics.pull,
          device_class: "timestamp",
          icon: "mdi:cloud-download",
        }),
        entity("button", "pull", { name: "Sync now", command_topic: o.topics.pullSet, payload_press: "PRESS", retain: false, icon: "mdi:sync" }),
      ]
    : [];
  return [
    ...pull,
    entity("sensor", "mode", {
      name: "Mode",
      state_topic: o.topics.state,
      value_template: "{{ value_json.mode }}",
      icon: "mdi:image-frame",
    }),
    entity("sensor", "file_count", {
      name: "File count",
      state_topic: o.topics.state,
      value_template: "{{ value_json.sd_card.file_count }}",
      unit_of_measurement: "files",
      state_class: "measurement",
      icon: "mdi:file-multiple",
    }),
    size("used_space", "Used space", "used_size"),
    size("free_space", "Free space", "free_size"),
    size("total_space", "Total space", "total_size"),
    entity("switch", "display", {
      name: "Display",
      state_topic: o.topics.displayStatus,
      command_topic: o.topics.displaySet,
      payload_on: "ON",
      payload_off: "OFF",
      state_on: "ON",
      state_off: "OFF",
      retain: false,
      icon: "mdi:monitor",
    }),
    entity("select", "mode_select", {
      name: "Set mode",
      state_topic: o.topics.state,
      value_template: MODE_OPTION,
      command_topic: o.topics.modeSet,
      options: ["msc", "ftp"],
      retain: false,
      icon: "mdi:swap-horizontal",
    }),
    ...(o.collections
      ? [
          entity("select", "collection", {
            name: "Collection",
            state_topic: o.topics.collection,
            command_topic: o.topics.collectionSet,
            options: o.collections,
            retain: false,
            icon: "mdi:image-multiple",
          }),
        ]
      : []),
    entity("button", "restart", {
      name: "Restart",
      command_topic: o.topics.restart,
      payload_press: "RESTART",
      retain: false,
      device_class: "restart",
    }),
  ];
}
