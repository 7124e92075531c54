# frozen_string_literal: true
# backtick_javascript: true

# "#{a}#{b}" with a part that holds bytes gives bytes, as on MRI (where the result takes the
# binary encoding): rack-session builds its cookie's plaintext as
# "#{[pad].pack('v')}#{random_padding}#{json.force_encoding(BINARY)}". Opal compiles an
# interpolation to a JS concatenation, which gives text, so every byte above 0x7f became
# two when the cipher read it. The compiler makes each interpolation a call of this function
# (Up::Node::Rewriters::Interpolation); when no part holds bytes it is the same
# concatenation as before.
#
# Each part that is not a String is interpolated by its to_s, as in MRI: Opal's JS
# concatenation took an Array by JS's own conversion ("#{[2, "x"]}" gave "2,x").
%x{
  function up_part(part) {
    if (typeof part === 'string' || part == null) return part == null ? '' : part;
    if (part.$$is_string || typeof part.$to_s !== 'function') return part;
    var text = part.$to_s();
    return (typeof text === 'string' || (text != null && text.$$is_string)) ? text : Opal.Kernel.$instance_method('to_s').$bind_call(part);
  }

  Opal.up_dstr = function() {
    var result = '', bytes = false, parts = new Array(arguments.length), i, part, enc;
    for (i = 0; i < arguments.length; i++) {
      part = parts[i] = up_part(arguments[i]);
      if (typeof part === 'object' && (enc = part.internal_encoding) && enc.name !== 'UTF-8') bytes = true;
      result += part;
    }
    if (!bytes) return result;

    var buffers = [];
    for (i = 0; i < parts.length; i++) {
      part = parts[i];
      enc = typeof part === 'object' ? part.internal_encoding : null;
      buffers.push(Buffer.from('' + part, enc && enc.name !== 'UTF-8' ? 'latin1' : 'utf8'));
    }
    return Opal.enc(Buffer.concat(buffers).toString('latin1'), 'binary');
  };
}
