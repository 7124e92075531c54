# frozen_string_literal: true

# String#encode without an encoding (Sinatra: `param.force_encoding(enc).encode!`).
text = "Jürgen"
p text.encode, text.encode.encoding.to_s, text.encode(invalid: :replace, undef: :replace)
p text.encode("UTF-8"), text.encode(Encoding::UTF_8).encoding.to_s
param = +"Ada"
param.force_encoding("UTF-8").encode!
p param, param.encode!.to_s
