// Validates Kubernetes manifests against their API schemas with the
// kubernetes-models packages (OpenAPI schemas of the Kubernetes API and of
// prometheus-operator's CRDs, checked with ajv).
//   node k8s_validate.mjs <node_modules dir> <file.yaml>...
// Every document must have a known apiVersion/kind and validate; prints one
// line per object and "N objects validated"; exit 1 on any failure. A file
// named *-patch.yaml is a JSON patch (RFC 6902: add, replace, test) for the
// DaemonSet: it is applied to a copy, which must validate too.
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

// RFC 6902 pointers and the three operations the patches use.
function applyPatch(doc, ops) {
  for (const op of ops) {
    const keys = op.path.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop();
    let parent = doc;
    for (const k of keys) {
      if (parent == null || !(k in parent)) throw new Error(`${op.op} ${op.path}: no ${k}`);
      parent = parent[k];
    }
    if (op.op === 'test') {
      if (JSON.stringify(parent?.[last]) !== JSON.stringify(op.value)) {
        throw new Error(`test ${op.path}: ${JSON.stringify(parent?.[last])} != ${JSON.stringify(op.value)}`);
      }
    } else if (op.op === 'replace') {
      if (!(last in parent)) throw new Error(`replace ${op.path}: nothing there`);
      parent[last] = op.value;
    } else if (op.op === 'add') {
      if (Array.isArray(parent)) {
        if (last === '-') parent.push(op.value);
        else parent.splice(Number(last), 0, op.value);
      } else {
        parent[last] = op.value;
      }
    } else {
      throw new Error(`unsupported op ${op.op}`);
    }
  }
  return doc;
}

let ok = 0;
let failed = 0;
const patches = files.filter((f) => f.endsWith('-patch.yaml'));
const objects = [];
for (const file of files.filter((f) => !f.endsWith('-patch.yaml'))) {
  const docs = yaml.loadAll(fs.readFileSync(file, 'utf8')).filter((d) => d != null);
  if (docs.length === 0) {
    console.log(`FAIL ${file}: no objects`);
    failed++;
  }
  for (const doc of docs) objects.push([path.basename(file), doc]);
}
for (const file of patches) {
  const target = objects.find(([, d]) => d.kind === 'DaemonSet');
  try {
    const ops = yaml.load(fs.readFileSync(file, 'utf8'));
    objects.push([`${target[0]} + ${path.basename(file)}`,
                  applyPatch(structuredClone(target[1]), ops)]);
  } catch (e) {
    console.log(`FAIL ${path.basename(file)}: ${e.message}`);
    failed++;
  }
}
{
  for (const [where, doc] of objects) {
    const name = `${where}: ${doc.kind}/${doc.metadata?.name}`;
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
