// Checks a Grafana dashboard JSON against Grafana's own schema types (npm @grafana/schema, generated from Grafana's
// CUE schema) with the TypeScript compiler: the dashboard as a whole against `Dashboard`, and each panel's options
// and custom field config against its panel plugin's `Options` and `FieldConfig`. String enums are compared by
// their values (JSON holds "line", not DrawStyle.Line), and object literals are checked for unknown keys, so a
// misspelt or misplaced field fails. Run by tests/dashboard.rs: `node dashboard-check.mjs <dashboard.json>`; prints
// the compiler's diagnostics and exits 1 when there are any.
import ts from 'typescript';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dashboard = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const PANELCFG = {
  timeseries: 'timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen',
  stat: 'stat/panelcfg/x/StatPanelCfg_types.gen',
  table: 'table/panelcfg/x/TablePanelCfg_types.gen',
  text: 'text/panelcfg/x/TextPanelCfg_types.gen',
};

const lines = [
  "import type { Dashboard, Panel, RowPanel } from '@grafana/schema';",
  ...Object.entries(PANELCFG).map(([name, path]) =>
    `import type * as ${name} from '@grafana/schema/dist/esm/raw/composable/${path}';`),
  // The schema's enums as the values JSON holds.
  'type Lit<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T :',
  '  T extends Array<infer U> ? Array<Lit<U>> : T extends object ? { [K in keyof T]: Lit<T[K]> } : T;',
  `export const dashboard: Lit<Dashboard> = ${JSON.stringify(dashboard, null, 2)};`,
];
const unknownTypes = [];
(dashboard.panels || []).forEach((panel, i) => {
  if (panel.type === 'row') {
    lines.push(`export const row${i}: Lit<RowPanel> = ${JSON.stringify(panel)};`);
    return;
  }
  lines.push(`export const panel${i}: Lit<Panel> = ${JSON.stringify(panel)};`);
  if (!PANELCFG[panel.type]) {
    unknownTypes.push(`panel ${i} (${panel.title}): no schema known here for type ${panel.type}`);
    return;
  }
  lines.push(`export const options${i}: Lit<${panel.type}.Options> = ${JSON.stringify(panel.options || {})};`);
  const custom = panel.fieldConfig && panel.fieldConfig.defaults && panel.fieldConfig.defaults.custom;
  if (custom) lines.push(`export const custom${i}: Partial<Lit<${panel.type}.FieldConfig>> = ${JSON.stringify(custom)};`);
});

// Inside node_modules, so that the compiler finds @grafana/schema beside it (and git ignores the file).
const dir = join(here, 'node_modules', '.cache', 'dashboard-check');
mkdirSync(dir, { recursive: true });
const file = join(dir, 'dashboard.ts');
writeFileSync(file, lines.join('\n') + '\n');
const program = ts.createProgram([file], {
  strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler, skipLibCheck: true,
});
const diagnostics = ts.getPreEmitDiagnostics(program);
for (const d of diagnostics) {
  const where = d.file ? d.file.getLineAndCharacterOfPosition(d.start) : null;
  console.log((where ? `${file}:${where.line + 1}: ` : '') + ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}
unknownTypes.forEach((u) => console.log(u));
const panels = (dashboard.panels || []).length;
console.log(`${panels} panels checked against @grafana/schema; ${diagnostics.length} diagnostic(s)`);
process.exit(diagnostics.length || unknownTypes.length ? 1 : 0);
