// Validates Kubernetes manifests against their API schemas with the
// kubernetes-models packages (OpenAPI schemas of the Kubernetes API and of
// prometheus-operator's CRDs, checked with ajv).
//   node k8s_validate.mjs <node_modules dir> <file.yaml>...
// Every document must have a known apiVersion/kind and validate; prints one
// line per object and "N objects validated"; exit 1 on any failure.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, ...files] = process.argv.slice(2);
const load = async (spec) => import(pathToFileURL(path.join(modules, spec)).href);
const yaml = await load('js-yaml/dist/js-yaml.mjs');

// apiVersion -> module folder.
function modulePath(apiVersion, kind) {
  if (apiVersion.startsWith('monitoring.coreos.com/')) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}.js`;
  }
  return `kubernetes-models/${apiVersion}/${kind}.js`;  // "v1" and "apps/v1" alike
}

let ok = 0;
let failed = 0;
for (const file of files) {
  const docs = yaml.loadAll(fs.readFileSync(file, 'utf8')).filter((d) => d != null);
  if (docs.length === 0) {
    console.log(`FAIL ${file}: no objects`);
    failed++;
  }
  for (const doc of docs) {
    const name = `${path.basename(file)}: ${doc.kind}/${doc.metadata?.name}`;
    let mod;
    try {
      mod = await load(modulePath(doc.apiVersion, doc.kind));
    } catch (e) {
      console.log(`FAIL ${name}: no schema for ${doc.apiVersion} ${doc.kind}`);
      failed++;
      continue;
    }
    const Model = mod[doc.kind];
    try {
      new Model(doc).validate();
      console.log(`ok   ${name} (${doc.apiVersion})`);
      ok++;
    } catch (e) {
      console.log(`FAIL ${name}: ${e.message}`);
      failed++;
    }
  }
}
console.log(`${ok} objects validated, ${failed} failed`);
process.exit(failed === 0 && ok > 0 ? 0 : 1);
