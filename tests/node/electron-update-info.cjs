// Reads an update channel file (YAML) on stdin the way electron-updater's generic provider does
// and prints what it makes of it as JSON: the parsed UpdateInfo, the files it would download
// (their addresses resolved against the feed address given as the first argument) and the
// blockmap addresses it would ask for when updating from the version given as the second.
// The licence server's tests run it against the server's own answers.
const { parseUpdateInfo, resolveFiles, Provider } = require("electron-updater/out/providers/Provider.js");
const { newBaseUrl } = require("electron-updater/out/util.js");

const [feed, fromVersion = "0.0.1", channelFile = "latest.yml"] = process.argv.slice(2);
let raw = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (raw += chunk));
process.stdin.on("end", () => {
  const base = newBaseUrl(feed);
  const info = parseUpdateInfo(raw, channelFile, new URL(channelFile, base));
  const files = resolveFiles(info, base);
  // getBlockMapFiles reads nothing of its instance.
  const blockmaps = Provider.prototype.getBlockMapFiles.call(null, files[0].url, fromVersion, info.version);
  process.stdout.write(
    JSON.stringify({
      info,
      releaseDateType: typeof info.releaseDate,
      versionType: typeof info.version,
      files: files.map((f) => ({ url: f.url.href, info: f.info })),
      blockmaps: blockmaps.map((u) => u.href),
    }),
  );
});
