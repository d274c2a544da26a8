// FTP mode's server: a fresh FTP server on the card each time the device enters FTP mode (credentials as the
// settings are now), stopped when it leaves. Its writes go straight into the card's figures.
import { createFtpServer, type FtpServer, type FtpServerOptions } from "./server.js";
import type { DeviceContext } from "../service.js";
import type { FtpShare } from "../state.js";

export function ftpMode(ctx: DeviceContext): FtpShare {
  let server: FtpServer | undefined;
  return {
    async start() {
      const settings = ctx.settings();
      const { config, card } = ctx;
      const options: FtpServerOptions = {
        root: card.root,
        host: config.host,
        port: config.ftpPort,
        user: settings.ftpUser,
        password: settings.ftpPassword,
        ...(config.ftpPassivePorts ? { passivePortRange: config.ftpPassivePorts } : {}),
        ...(config.ftpPublicAddress ? { publicAddress: config.ftpPublicAddress } : {}),
        blockMode: !config.ftpStreamOnly,
        card,
        // The device's one throttle: leaving and re-entering FTP mode does not forgive failed logins.
        throttle: ctx.loginThrottle,
        onTransfer: (phase, transfer) => ctx.state.ftpTransfer(phase, transfer),
        log: ctx.log,
      };
      const next = createFtpServer(options);
      await next.start();
      server = next;
    },
    async stop() {
      const current = server;
      server = undefined;
      await current?.stop();
    },
  };
}
