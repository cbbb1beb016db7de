// Bundles src/extension.ts and vscode-languageclient into out/extension.js.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
await esbuild.build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "out/extension.js",
  external: ["vscode"],
  format: "cjs",
  platform: "node",
  target: "node18",
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
});
