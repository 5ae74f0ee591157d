// Package grammar constrains generation to JSON that parses and matches a
// JSON Schema: response_format "json_object" and "json_schema".
//
// Compile turns a schema into a Matcher, a nondeterministic pushdown
// automaton over the bytes of the output text; JSONObject is the grammar of
// any JSON object. A Constraint walks a Vocab (a byte trie over the
// tokens' pieces) with the Matcher's state to mask, before each sampling
// step, every token that would leave the grammar, and advances by the token
// chosen. It implements sample.Constraint.
//
// # Output form
//
// The grammar admits compact JSON only. Whitespace is limited to one
// optional space after ':' and after ',' ({"a": 1, "b": [1, 2]}); nothing
// else may hold whitespace, so every state has a bounded number of
// whitespace bytes and cannot loop on them. The document ends right after
// the value: the end-of-generation tokens are allowed exactly when the value
// is complete, and after a complete object, array, string or literal only
// they are allowed. A number at the root may still take digits while end of
// generation is also allowed. Object properties may come in any order, each
// at most once; strings must be valid UTF-8 (raw, or escaped except lone
// surrogates); numbers follow RFC 8259 (integers: -?(0|[1-9][0-9]*)).
//
// # Supported JSON Schema
//
//   - type: "object", "array", "string", "number", "integer", "boolean",
//     "null", or an array of them; nullable: true (OpenAPI) adds null.
//     Without type, the type is implied by the keywords present (properties
//     means object, items means array, minLength means string); with none,
//     any JSON value.
//   - object: properties, required, additionalProperties (absent or true:
//     any value; false: no other keys; a schema). A required name that is not
//     declared is written with the additionalProperties schema. Undeclared
//     keys of an object that also declares names may not contain escapes, so
//     a declared name cannot sneak in spelt differently.
//   - array: items (a schema or a boolean), prefixItems, the draft 4-7 tuple
//     form items: [...] with additionalItems, minItems, maxItems,
//     uniqueItems: false.
//   - string: minLength, maxLength (in code points, escapes counting one).
//   - enum, const: any JSON values, written exactly as encoded compactly with
//     sorted keys; filtered by type when type is also given.
//   - anyOf; oneOf when its alternatives are provably disjoint (different
//     JSON types, enum/const values that differ, or objects told apart by a
//     required property: the discriminated unions clients generate), since
//     it is enforced as anyOf; allOf with one schema.
//   - $ref to a JSON pointer inside the document (#, #/$defs/X,
//     #/definitions/X, ...); shared references compile once.
//   - boolean schemas true and false.
//   - annotations are ignored: title, description, default, examples,
//     $schema, $id, $comment, deprecated, readOnly, writeOnly, x-* and the
//     like. format is not enforced and unknown keywords are ignored; both are
//     reported by Matcher.Notes.
//
// # Refused schemas
//
// Compile returns a *SchemaError whose Class is one of:
//
//   - ErrUnsupported: pattern, patternProperties, minimum, maximum,
//     exclusiveMinimum, exclusiveMaximum, multipleOf, minProperties,
//     maxProperties, uniqueItems: true, contains, propertyNames,
//     dependentRequired, dependentSchemas, dependencies, if/then/else, not,
//     unevaluatedProperties, unevaluatedItems, $dynamicRef; a oneOf whose
//     alternatives may overlap (number and integer, two strings); recursive $ref
//     cycles; references outside the document; allOf with several schemas;
//     $ref, anyOf, oneOf or allOf next to other assertion keywords; enum or
//     const next to keywords other than type and nullable.
//   - ErrInvalidSchema: not JSON, a keyword of the wrong JSON type, an
//     unknown type name, a $ref that points nowhere.
//   - ErrUnsatisfiable: no value matches (false, an empty enum,
//     minLength above maxLength, minItems above what items allow, a required
//     property forbidden or matching nothing).
//   - ErrTooLarge: more than 64 nested subschemas, 16384 compiled nodes,
//     1 MiB of enum/const text, or a minItems/minLength above 65536.
//
// # Tokens
//
// The mask walks the token trie with the matcher's state, pruning a
// subtree at the first byte refused. Inside a string without length bounds
// the tokens that are plain string content (no quote, backslash or control
// byte, whole UTF-8) are allowed wholesale and only the other tokens are
// walked. Each Constraint caches the masks of the last 256 distinct states.
//
// Every state the compiled grammar can reach can still be completed, so a
// vocabulary that holds every single byte as a token (SentencePiece byte
// fallback, byte-level BPE) never has every token masked before the value
// is complete.
//
// # Concurrency and imports
//
// Matcher and Vocab are immutable and safe for concurrent use; a
// Constraint belongs to one generation. The package imports only the
// standard library.
package grammar
