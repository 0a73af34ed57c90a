// Runs electron-updater's own differential download (GenericDifferentialDownloader: the download
// plan, multi-range requests and its multipart/byteranges parser) against a download address.
// Arguments: the new file's address, the old file, where to write the new file, and a JSON file
// holding {size, sha512, oldBlockMap, newBlockMap}. electron-updater checks the written file's
// sha512 itself; the program exits non-zero when anything fails.
const http = require("http");
const fs = require("fs");
const { HttpExecutor, CancellationToken } = require("builder-util-runtime");
const { GenericDifferentialDownloader } = require("electron-updater/out/differentialDownloader/GenericDifferentialDownloader.js");

class NodeHttpExecutor extends HttpExecutor {
  createRequest(options, callback) {
    return http.request(options, callback);
  }
}

const [newUrl, oldFile, newFile, planFile] = process.argv.slice(2);
const plan = JSON.parse(fs.readFileSync(planFile, "utf8"));
const logger = { info: () => {}, warn: (m) => console.error(m), error: (m) => console.error(m) };
const downloader = new GenericDifferentialDownloader({ size: plan.size, sha512: plan.sha512 }, new NodeHttpExecutor(), {
  newUrl: new URL(newUrl),
  oldFile,
  newFile,
  logger,
  requestHeaders: {},
  isUseMultipleRangeRequest: true,
  cancellationToken: new CancellationToken(),
});
downloader
  .download(plan.oldBlockMap, plan.newBlockMap)
  .then(() => process.stdout.write("ok"))
  .catch((e) => {
    console.error(e && e.stack ? e.stack : String(e));
    process.exit(1);
  });
