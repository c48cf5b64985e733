// The TeIL extension: starts `teil lsp` (the path is the `teil.server.path` setting) for
// `.teil` and `.tin` files. Every answer comes from the server; no language logic lives here.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function start() {
  const config = vscode.workspace.getConfiguration("teil");
  const command = config.get("server.path") || "teil";
  const diagnosticsUrl = config.get("diagnosticsUrl") || undefined;
  const serverOptions = { command, args: ["lsp"] };
  const clientOptions = {
    documentSelector: [
      { scheme: "file", language: "teil" },
      { scheme: "file", language: "tin" },
      { scheme: "untitled", language: "teil" },
    ],
    initializationOptions: diagnosticsUrl ? { diagnosticsUrl } : {},
  };
  client = new LanguageClient("teil", "TeIL language server", serverOptions, clientOptions);
  return client.start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration("teil")) {
        if (client) {
          await client.stop();
        }
        await start();
      }
    })
  );
  await start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
