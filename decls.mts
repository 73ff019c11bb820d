import ts from "typescript";
import { readFileSync } from "node:fs";
const f = process.argv[2]!;
const src = ts.createSourceFile(f, readFileSync(f, "utf8"), ts.ScriptTarget.Latest, true);
for (const st of src.statements) {
  if (ts.isImportDeclaration(st)) continue;
  const a = src.getLineAndCharacterOfPosition(st.getFullStart()).line + 1, b = src.getLineAndCharacterOfPosition(st.getEnd()).line + 1;
  let name = ts.SyntaxKind[st.kind];
  if ((st as any).name) name += " " + (st as any).name.getText();
  if (ts.isVariableStatement(st)) name += " " + st.declarationList.declarations.map((d) => d.name.getText()).join(",");
  console.log(a, b, name);
}
