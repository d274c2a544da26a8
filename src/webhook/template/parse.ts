// Parser for Go text/template, following text/template/parse/parse.go: the same tree, the same
// checks at parse time (undefined functions and variables, empty pipelines, misplaced else/end)
// and the same messages, "template: NAME:LINE: message".
import { lex, type Item, type ItemType } from "./lex.js";
import { parseNumber, unquote, type NumberValue } from "./literal.js";
import { TemplateError } from "./error.js";
import { quote } from "./fmt.js";

export type Node =
  | { type: "text"; pos: number; text: string }
  | { type: "action"; pos: number; pipe: PipeNode }
  | ControlNode
  | { type: "break" | "continue"; pos: number }
  | TemplateNode
  | ListNode;

export interface ControlNode {
  type: "if" | "with" | "range";
  pos: number;
  pipe: PipeNode;
  list: ListNode;
  elseList: ListNode | null;
}

/** {{template "name" pipeline}}, also what {{block}} leaves in place. */
export interface TemplateNode {
  type: "template";
  pos: number;
  name: string;
  pipe: PipeNode | null;
}

export interface ListNode {
  type: "list";
  pos: number;
  nodes: Node[];
}

export interface PipeNode {
  type: "pipe";
  pos: number;
  isAssign: boolean;
  decl: VariableNode[];
  cmds: CommandNode[];
}

export interface CommandNode {
  type: "command";
  pos: number;
  args: ArgNode[];
}

export interface VariableNode {
  type: "variable";
  pos: number;
  ident: string[];
}

export type ArgNode =
  | { type: "field"; pos: number; ident: string[] }
  | VariableNode
  | { type: "identifier"; pos: number; ident: string }
  | { type: "dot"; pos: number }
  | { type: "nil"; pos: number }
  | { type: "bool"; pos: number; value: boolean }
  | { type: "number"; pos: number; text: string; value: NumberValue }
  | { type: "string"; pos: number; quoted: string; text: string }
  | { type: "chain"; pos: number; node: ArgNode; field: string[] }
  | PipeNode;

/** Go's Node.String(), used in execution error messages ("at <...>"). */
export function nodeString(n: Node | ArgNode | CommandNode): string {
  switch (n.type) {
    case "text":
      return n.text;
    case "action":
      return `{{${nodeString(n.pipe)}}}`;
    case "if":
    case "with":
    case "range": {
      const elsePart = n.elseList ? `{{else}}${nodeString(n.elseList)}` : "";
      return `{{${n.type} ${nodeString(n.pipe)}}}${nodeString(n.list)}${elsePart}{{end}}`;
    }
    case "break":
    case "continue":
      return `{{${n.type}}}`;
    case "template":
      return `{{template ${quote(n.name)}${n.pipe ? ` ${nodeString(n.pipe)}` : ""}}}`;
    case "list":
      return n.nodes.map(nodeString).join("");
    case "pipe": {
      const decl = n.decl.length ? `${n.decl.map(nodeString).join(", ")}${n.isAssign ? " = " : " := "}` : "";
      return decl + n.cmds.map(nodeString).join(" | ");
    }
    case "command":
      return n.args.map((a) => (a.type === "pipe" ? `(${nodeString(a)})` : nodeString(a))).join(" ");
    case "field":
      return n.ident.map((i) => `.${i}`).join("");
    case "variable":
      return n.ident.join(".");
    case "identifier":
      return n.ident;
    case "dot":
      return ".";
    case "nil":
      return "nil";
    case "bool":
      return String(n.value);
    case "number":
      return n.text;
    case "string":
      return n.quoted;
    case "chain": {
      const inner = n.node.type === "pipe" ? `(${nodeString(n.node)})` : nodeString(n.node);
      return inner + n.field.map((f) => `.${f}`).join("");
    }
  }
}

/** Go's item.String(), used in "unexpected X in Y" messages. */
function itemString(item: Item): string {
  if (item.type === "eof") return "EOF";
  if (item.type === "error") return item.val;
  if (item.type === "keyword") return `<${item.val}>`;
  const chars = [...item.val];
  if (chars.length > 10) return `${quote(chars.slice(0, 10).join(""))}...`;
  return quote(item.val);
}

/** Go's parse.IsEmptyTree: only white space and comments. */
function isEmptyTree(n: Node): boolean {
  if (n.type === "list") return n.nodes.every(isEmptyTree);
  return n.type === "text" && n.text.trim() === "";
}

export class Parser {
  private readonly items: Item[];
  private index = 0;
  /** The furthest item read so far: Go reports its line in parse errors. */
  private furthest = 0;
  private actionLine = 0;
  private vars: string[] = ["$"];
  private rangeDepth = 0;
  private readonly newlines: number[] = [];
  /** Every named template: the file itself and its {{define}} and {{block}} templates. */
  private readonly templates = new Map<string, ListNode>();

  constructor(
    text: string,
    private readonly name: string,
    private readonly hasFunction: (name: string) => boolean,
  ) {
    this.items = lex(text);
    for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) this.newlines.push(i);
  }

  /** Parses the file; returns its templates by name, the file itself under its own name. */
  parse(): Map<string, ListNode> {
    const root: ListNode = { type: "list", pos: this.peek().pos, nodes: [] };
    while (this.peek().type !== "eof") {
      if (this.peek().type === "leftDelim") {
        const delim = this.index;
        this.next();
        const keyword = this.nextNonSpace();
        if (keyword.type === "keyword" && keyword.val === "define") {
          this.parseDefinition();
          continue;
        }
        this.index = delim;
      }
      const n = this.textOrAction();
      if (n.type === "end" || n.type === "else") this.errorf(`unexpected {{${n.type}}}`);
      root.nodes.push(n as Node);
    }
    this.add(this.name, root);
    return this.templates;
  }

  /** Go's Tree.add: a template may be defined twice only if one definition is empty. */
  private add(name: string, root: ListNode): void {
    const existing = this.templates.get(name);
    if (existing === undefined || isEmptyTree(existing)) this.templates.set(name, root);
    else if (!isEmptyTree(root)) this.errorf(`template: multiple definition of template ${quote(name)}`);
  }

  /** Parses a template body with its own variables, as a separate tree in Go. */
  private subTree(context: string): ListNode {
    const vars = this.vars;
    const rangeDepth = this.rangeDepth;
    this.vars = ["$"];
    this.rangeDepth = 0;
    try {
      const { list, next } = this.itemList();
      if (next.type !== "end") this.errorf(`unexpected {{${next.type}}} in ${context}`);
      return list;
    } finally {
      this.vars = vars;
      this.rangeDepth = rangeDepth;
    }
  }

  private parseDefinition(): void {
    const context = "define clause";
    const name = this.templateName(this.nextNonSpace(), context);
    this.expect("rightDelim", context);
    this.add(name, this.subTree(context));
  }

  private templateName(item: Item, context: string): string {
    if (item.type !== "string" && item.type !== "rawString") this.unexpected(item, context);
    const name = unquote(item.val);
    if (name === null) this.errorf("invalid syntax");
    return name;
  }

  private templateControl(): TemplateNode {
    const context = "template clause";
    const token = this.nextNonSpace();
    const name = this.templateName(token, context);
    let pipe: PipeNode | null = null;
    if (this.nextNonSpace().type !== "rightDelim") {
      this.backup();
      pipe = this.pipeline(context, "rightDelim");
    }
    return { type: "template", pos: token.pos, name, pipe };
  }

  private blockControl(): TemplateNode {
    const context = "block clause";
    const token = this.nextNonSpace();
    const name = this.templateName(token, context);
    const pipe = this.pipeline(context, "rightDelim");
    this.add(name, this.subTree(context));
    return { type: "template", pos: token.pos, name, pipe };
  }

  /** The 1-based line of an offset: one more than the number of newlines before it. */
  private lineOf(pos: number): number {
    let lo = 0;
    let hi = this.newlines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.newlines[mid]! < pos) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  }

  private errorf(message: string): never {
    const line = this.lineOf(this.items[this.furthest]!.pos);
    throw new TemplateError(`template: ${this.name}:${line}: ${message}`, this.name, line);
  }

  private unsupported(what: string): never {
    this.errorf(`${what} is not supported by this server's template engine`);
  }

  private next(): Item {
    const item = this.peek();
    this.index++;
    return item;
  }

  private peek(): Item {
    const i = Math.min(this.index, this.items.length - 1);
    this.furthest = Math.max(this.furthest, i);
    return this.items[i]!;
  }

  private backup(): void {
    this.index--;
  }

  private nextNonSpace(): Item {
    let item = this.next();
    while (item.type === "space") item = this.next();
    return item;
  }

  private peekNonSpace(): Item {
    const item = this.nextNonSpace();
    this.backup();
    return item;
  }

  private expect(type: ItemType, context: string): Item {
    const item = this.nextNonSpace();
    if (item.type !== type) this.unexpected(item, context);
    return item;
  }

  private unexpected(item: Item, context: string): never {
    if (item.type === "error") {
      let extra = "";
      const line = this.lineOf(item.pos);
      if (this.actionLine !== 0 && this.actionLine !== line) {
        extra = ` in action started at ${this.name}:${this.actionLine}`;
        if (item.val.endsWith(" action")) extra = extra.slice(" in action".length);
      }
      this.errorf(`${item.val}${extra}`);
    }
    this.errorf(`unexpected ${itemString(item)} in ${context}`);
  }

  private itemList(): { list: ListNode; next: { type: "end" | "else"; pos: number } } {
    const list: ListNode = { type: "list", pos: this.peekNonSpace().pos, nodes: [] };
    while (this.peekNonSpace().type !== "eof") {
      const n = this.textOrAction();
      if (n.type === "end" || n.type === "else") return { list, next: n as { type: "end" | "else"; pos: number } };
      list.nodes.push(n as Node);
    }
    this.errorf("unexpected EOF");
  }

  private textOrAction(): Node | { type: "end" | "else"; pos: number } {
    const item = this.nextNonSpace();
    switch (item.type) {
      case "text":
        return { type: "text", pos: item.pos, text: item.val };
      case "leftDelim": {
        this.actionLine = this.lineOf(item.pos);
        try {
          return this.action();
        } finally {
          this.actionLine = 0;
        }
      }
      default:
        this.unexpected(item, "input");
    }
  }

  private action(): Node | { type: "end" | "else"; pos: number } {
    const item = this.nextNonSpace();
    if (item.type === "keyword") {
      switch (item.val) {
        case "if":
        case "with":
        case "range":
          return this.control(item.val);
        case "else":
          return this.elseControl();
        case "end":
          return { type: "end", pos: this.expect("rightDelim", "end").pos };
        case "break":
        case "continue": {
          const after = this.nextNonSpace();
          if (after.type !== "rightDelim") this.unexpected(after, `{{${item.val}}}`);
          if (this.rangeDepth === 0) this.errorf(`{{${item.val}}} outside {{range}}`);
          return { type: item.val, pos: item.pos };
        }
      }
      if (item.val === "template") return this.templateControl();
      if (item.val === "block") return this.blockControl();
    }
    this.backup();
    const pos = this.peek().pos;
    return { type: "action", pos, pipe: this.pipeline("command", "rightDelim") };
  }

  private elseControl(): { type: "else"; pos: number } {
    const peek = this.peekNonSpace();
    // "{{else if ...}}" and "{{else with ...}}" leave the keyword for the enclosing control.
    if (peek.type === "keyword" && (peek.val === "if" || peek.val === "with")) return { type: "else", pos: peek.pos };
    return { type: "else", pos: this.expect("rightDelim", "else").pos };
  }

  private control(context: "if" | "with" | "range"): Node {
    const varsBefore = this.vars.length;
    try {
      const pipe = this.pipeline(context, "rightDelim");
      if (context === "range") this.rangeDepth++;
      const { list, next } = this.itemList();
      if (context === "range") this.rangeDepth--;
      let elseList: ListNode | null = null;
      if (next.type === "else") {
        const peek = this.peek();
        if ((context === "if" || context === "with") && peek.type === "keyword" && peek.val === context) {
          // {{if a}}x{{else if b}}y{{end}} is {{if a}}x{{else}}{{if b}}y{{end}}{{end}}.
          this.next();
          elseList = { type: "list", pos: next.pos, nodes: [this.control(context)] };
        } else {
          const rest = this.itemList();
          if (rest.next.type !== "end") this.errorf(`expected end; found {{${rest.next.type}}}`);
          elseList = rest.list;
        }
      }
      return { type: context, pos: pipe.pos, pipe, list, elseList };
    } finally {
      this.vars.length = varsBefore;
    }
  }

  private pipeline(context: string, end: ItemType): PipeNode {
    const pipe: PipeNode = { type: "pipe", pos: this.peekNonSpace().pos, isAssign: false, decl: [], cmds: [] };
    // Declarations or assignments: "$x :=", "$x =", "$i, $e :=".
    for (;;) {
      const v = this.peekNonSpace();
      if (v.type !== "variable") break;
      this.nextNonSpace();
      const next = this.peekNonSpace();
      if (next.type === "assign" || next.type === "declare") {
        pipe.isAssign = next.type === "assign";
        this.nextNonSpace();
        pipe.decl.push({ type: "variable", pos: v.pos, ident: [v.val] });
        this.vars.push(v.val);
        break;
      }
      if (next.type === "char" && next.val === ",") {
        this.nextNonSpace();
        pipe.decl.push({ type: "variable", pos: v.pos, ident: [v.val] });
        this.vars.push(v.val);
        if (context === "range" && pipe.decl.length < 2) {
          const t = this.peekNonSpace().type;
          if (t === "variable" || t === "rightDelim" || t === "rightParen") continue;
          this.errorf("range can only initialize variables");
        }
        this.errorf(`too many declarations in ${context}`);
      }
      // Not a declaration: push the variable back.
      this.index = this.items.indexOf(v);
      break;
    }
    for (;;) {
      const item = this.nextNonSpace();
      if (item.type === end) {
        this.checkPipeline(pipe, context);
        return pipe;
      }
      switch (item.type) {
        case "bool":
        case "charConstant":
        case "complex":
        case "dot":
        case "field":
        case "identifier":
        case "number":
        case "nil":
        case "rawString":
        case "string":
        case "variable":
        case "leftParen":
          this.backup();
          pipe.cmds.push(this.command());
          break;
        default:
          this.unexpected(item, context);
      }
    }
  }

  private checkPipeline(pipe: PipeNode, context: string): void {
    if (pipe.cmds.length === 0) this.errorf(`missing value for ${context}`);
    pipe.cmds.slice(1).forEach((c, i) => {
      const first = c.args[0]!.type;
      if (first === "bool" || first === "dot" || first === "nil" || first === "number" || first === "string") {
        this.errorf(`non executable command in pipeline stage ${i + 2}`);
      }
    });
  }

  private command(): CommandNode {
    const cmd: CommandNode = { type: "command", pos: this.peekNonSpace().pos, args: [] };
    for (;;) {
      this.peekNonSpace();
      const operand = this.operand();
      if (operand) cmd.args.push(operand);
      const item = this.next();
      if (item.type === "space") continue;
      if (item.type === "rightDelim" || item.type === "rightParen") this.backup();
      else if (item.type !== "pipe") this.unexpected(item, "operand");
      break;
    }
    if (cmd.args.length === 0) this.errorf("empty command");
    return cmd;
  }

  private operand(): ArgNode | null {
    const node = this.term();
    if (!node || this.peek().type !== "field") return node;
    const chainPos = this.peek().pos;
    const fields: string[] = [];
    while (this.peek().type === "field") fields.push(this.next().val.slice(1));
    switch (node.type) {
      case "field":
        return { type: "field", pos: chainPos, ident: [...node.ident, ...fields] };
      case "variable":
        return { type: "variable", pos: chainPos, ident: [...node.ident, ...fields] };
      case "bool":
      case "string":
      case "number":
      case "nil":
      case "dot":
        return this.errorf(`unexpected . after term ${quote(nodeString(node))}`);
      default:
        return { type: "chain", pos: chainPos, node, field: fields };
    }
  }

  private term(): ArgNode | null {
    const item = this.nextNonSpace();
    switch (item.type) {
      case "identifier":
        if (!this.hasFunction(item.val)) {
          if (item.val === "call") this.unsupported(`the "call" function`);
          this.errorf(`function ${JSON.stringify(item.val)} not defined`);
        }
        return { type: "identifier", pos: item.pos, ident: item.val };
      case "dot":
        return { type: "dot", pos: item.pos };
      case "nil":
        return { type: "nil", pos: item.pos };
      case "variable":
        if (!this.vars.includes(item.val)) this.errorf(`undefined variable ${JSON.stringify(item.val)}`);
        return { type: "variable", pos: item.pos, ident: [item.val] };
      case "field":
        return { type: "field", pos: item.pos, ident: [item.val.slice(1)] };
      case "bool":
        return { type: "bool", pos: item.pos, value: item.val === "true" };
      case "complex":
        return this.unsupported(`complex number ${item.val}`);
      case "charConstant":
      case "number": {
        const value = parseNumber(item.val, item.type === "charConstant");
        if (typeof value === "string") {
          if (value.startsWith("unsupported: ")) this.unsupported(value.slice("unsupported: ".length));
          this.errorf(value);
        }
        return { type: "number", pos: item.pos, text: item.val, value };
      }
      case "leftParen":
        return this.pipeline("parenthesized pipeline", "rightParen");
      case "string":
      case "rawString": {
        const text = unquote(item.val);
        if (text === null) this.errorf("invalid syntax");
        return { type: "string", pos: item.pos, quoted: item.val, text };
      }
    }
    this.backup();
    return null;
  }
}
