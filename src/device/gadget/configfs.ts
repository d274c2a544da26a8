// The kernel's configfs gadget: one USB configuration with one mass-storage function whose single LUN is a
// removable medium, bound to the board's USB device controller (UDC). The LUN's `file` is the inserted medium.
import { access, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GadgetError } from "./system.js";

export interface GadgetPaths {
  /** Where configfs has its USB gadgets; normally /sys/kernel/config/usb_gadget. */
  gadgets: string;
  /** Where the kernel lists USB device controllers; normally /sys/class/udc. */
  udcs: string;
}

export const SYSTEM_PATHS: GadgetPaths = { gadgets: "/sys/kernel/config/usb_gadget", udcs: "/sys/class/udc" };

const ENABLE_HINT =
  "On a Raspberry Pi Zero 2 W: add dtoverlay=dwc2 to /boot/firmware/config.txt and modules-load=dwc2,libcomposite " +
  "after rootwait in /boot/firmware/cmdline.txt, reboot, and plug the frame into the data port (USB, not PWR). " +
  "Elsewhere: modprobe libcomposite, mount -t configfs none /sys/kernel/config, and use a board with USB device mode.";

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** The USB device controllers the kernel has. */
async function controllers(paths: GadgetPaths): Promise<string[]> {
  return (await readdir(paths.udcs).catch(() => [] as string[])).sort();
}

/** Everything the gadget needs that this machine lacks, in one message; resolves with the UDC to bind to. */
export async function checkGadgetSupport(paths: GadgetPaths, wantedUdc: string | undefined): Promise<string> {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push("it must run as root (configfs, mount and the loop device need it)");
  const configfs = join(paths.gadgets, "..");
  if (!(await exists(configfs))) missing.push(`configfs is not mounted at ${configfs} (mount -t configfs none ${configfs})`);
  else if (!(await exists(paths.gadgets))) missing.push(`${paths.gadgets} is missing: the libcomposite module is not loaded (modprobe libcomposite)`);
  const udcs = await controllers(paths);
  if (udcs.length === 0) missing.push(`no USB device controller in ${paths.udcs} (on a Pi, the dwc2 driver in peripheral mode)`);
  else if (wantedUdc !== undefined && !udcs.includes(wantedUdc)) missing.push(`no USB device controller named ${wantedUdc} (there is ${udcs.join(", ")})`);
  if (missing.length > 0) {
    throw new GadgetError("DEVICE_GADGET_UNSUPPORTED", { missing: missing.join("; "), hint: ENABLE_HINT });
  }
  return wantedUdc ?? udcs[0]!;
}

export interface GadgetIdentity {
  manufacturer: string;
  product: string;
  serial: string;
}

/** One configfs gadget named `name`; created if missing, reused as it is otherwise (after a crash, say). */
export class ConfigfsGadget {
  private readonly dir: string;
  private readonly lun: string;

  constructor(
    paths: GadgetPaths,
    name: string,
    private readonly udc: string,
  ) {
    this.dir = join(paths.gadgets, name);
    this.lun = join(this.dir, "functions/mass_storage.usb0/lun.0");
  }

  /** Creates the gadget (no medium inserted) and binds it to the UDC, so the host sees an empty card reader. */
  async setUp(identity: GadgetIdentity): Promise<void> {
    const write = (path: string, value: string): Promise<void> => writeFile(join(this.dir, path), value);
    await mkdir(this.dir, { recursive: true });
    if ((await this.boundTo()) === "") {
      await write("idVendor", "0x1d6b"); // Linux Foundation
      await write("idProduct", "0x0104"); // Multifunction Composite Gadget
      await write("bcdDevice", "0x0100");
      await write("bcdUSB", "0x0200");
      await mkdir(join(this.dir, "strings/0x409"), { recursive: true });
      await write("strings/0x409/manufacturer", identity.manufacturer);
      await write("strings/0x409/product", identity.product);
      await write("strings/0x409/serialnumber", identity.serial);
      await mkdir(join(this.dir, "configs/c.1/strings/0x409"), { recursive: true });
      await write("configs/c.1/strings/0x409/configuration", "FrameFi card");
      await write("configs/c.1/MaxPower", "250");
      await mkdir(join(this.dir, "functions/mass_storage.usb0"), { recursive: true });
      await write("functions/mass_storage.usb0/lun.0/removable", "1");
      await write("functions/mass_storage.usb0/lun.0/ro", "0");
      // SCSI INQUIRY: vendor (8 characters), product (16), revision (4).
      await write("functions/mass_storage.usb0/lun.0/inquiry_string", `${"FrameFi".padEnd(8)}${"SD card".padEnd(16)}1.0 `);
      const link = join(this.dir, "configs/c.1/mass_storage.usb0");
      if (!(await exists(link))) await symlink(join(this.dir, "functions/mass_storage.usb0"), link);
    }
    await this.eject();
    if ((await this.boundTo()) === "") {
      try {
        await write("UDC", this.udc);
      } catch (e) {
        throw new GadgetError("DEVICE_GADGET_BIND_FAILED", { udc: this.udc, reason: (e as Error).message }, { cause: e });
      }
    }
  }

  /** The backing file of the inserted medium; "" when the LUN is empty. */
  async medium(): Promise<string> {
    return (await readFile(join(this.lun, "file"), "utf8").catch(() => "")).trim();
  }

  /** Inserts `image` as the medium: the host sees a freshly inserted card. */
  async insert(image: string): Promise<void> {
    await writeFile(join(this.lun, "file"), image);
  }

  /** Takes the medium away even if the host asked to lock it in (forced_eject, where the kernel has it). */
  async eject(): Promise<void> {
    if ((await this.medium()) === "") return;
    const forced = join(this.lun, "forced_eject");
    if (await exists(forced)) await writeFile(forced, "1");
    else await writeFile(join(this.lun, "file"), "\n");
  }

  private async boundTo(): Promise<string> {
    return (await readFile(join(this.dir, "UDC"), "utf8").catch(() => "")).trim();
  }
}
