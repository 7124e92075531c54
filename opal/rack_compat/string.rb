# frozen_string_literal: true
# backtick_javascript: true

require 'rack_compat/bytes'

# String#force_encoding with MRI's meaning (same bytes, new encoding), on Opal's two string
# kinds: text (JS characters stand for their UTF-8 bytes) and bytes (internal encoding
# binary, one byte per character; see RackCompat::Bytes).
#   bytes -> UTF-8: the bytes decoded as text. text -> binary: the UTF-8 bytes. Opal only
#   relabelled, so "é".b was one character and a binary upload named "ü" stayed mojibake.
#   A primitive JS string: Opal raised FrozenError. Rack calls force_encoding both as an
#   expression and as a statement; here the value is always right, and a statement on a
#   primitive string is a no-op instead of an error.
# Opal strings are immutable, so a conversion returns a new string; only a relabelling of a
# boxed string (Opal's own behaviour) happens in place, and a String made to change is
# changed.
class String
  alias __opal_force_encoding force_encoding

  def force_encoding(encoding)
    encoding = Encoding.find(encoding.to_s) unless encoding.is_a?(Encoding)
    if `self.$$up_mutable === true`
      # A String that can change (opal/opal_fixes/mutable_strings.rb) changes in place, as on
      # MRI, so a second reference sees it (Roda's `hmac = secret = secret.dup.force_encoding(..)`).
      `Opal.up_set_value(self, #{`Opal.up_immutable_copy(self)`.force_encoding(encoding)})`
      return self
    end
    bytes = RackCompat::Bytes.binary?(self)
    if bytes
      return self if encoding.binary?
      return RackCompat::Bytes.utf8(self) if encoding == Encoding::UTF_8
    else
      return RackCompat::Bytes.from_buffer(RackCompat::Bytes.to_buffer(self)) if encoding.binary?
      return self if encoding == Encoding::UTF_8 && `typeof self === 'string'`
    end
    return `Opal.enc(self, #{encoding.name})` if `typeof self === 'string'`

    __opal_force_encoding(encoding)
  end

  def b
    force_encoding(Encoding::BINARY)
  end
end

# String#to_s in Opal returns the primitive JS string, which drops a boxed string's internal
# encoding; MRI returns self. Rack::Response buffers bodies with part.to_s, so binary parts
# (gzip from Rack::Deflater, file bytes) came back as text and their bytes changed. A string
# holding bytes (binary internal encoding) is returned as is; text keeps Opal's fast path.
class String
  # One JS expression: to_s runs for every string interpolated into another.
  def to_s
    %x{
      var enc = self.internal_encoding;
      return (typeof self !== 'string' && enc && enc.name !== 'UTF-8' && self.$$class === Opal.String) ?
        self : self.toString();
    }
  end
end

# A part cut from bytes is bytes, as on MRI: Opal's String#[] (and slice, byteslice) gave a
# primitive JS string, without the mark, so its bytes above 0x7f changed when it reached
# Node (rack-session's cookie salt, cut with data.slice(1, 32), made a wrong key and no
# cookie opened). Text keeps Opal's fast path.
class String
  alias __opal_aref []

  def [](index, length = undefined)
    part = `length === undefined ? self.$__opal_aref(index) : self.$__opal_aref(index, length)`
    text = `typeof self === 'string' || part === nil || !self.internal_encoding || self.internal_encoding.name === 'UTF-8'`
    text || !RackCompat::Bytes.binary?(self) ? part : RackCompat::Bytes.binary(part)
  end

  alias slice []
  alias byteslice []
end

# String#scrub: a JS string cannot hold an invalid UTF-8 sequence (bytes are decoded with
# U+FFFD where they are made), so text is already scrubbed; bytes are not text to scrub.
# Opal has no scrub, and Rack's multipart parser scrubs each file name.
class String
  def scrub(_replacement = nil)
    self
  end
end

# sub and gsub of bytes give bytes, as on MRI: Opal's return a primitive JS string, which
# reads the bytes above 0x7f as characters (Rack's multipart parser cuts each part's body
# from the boundary with sub). Text keeps Opal's path, at the cost of one test: these run
# for every route Sinatra matches, so they call Opal's methods directly.
class String
  alias __opal_sub sub
  alias __opal_gsub gsub

  def sub(pattern, replacement = nil, &block)
    %x{
      var plain = self.$__opal_sub;
      plain.$$p = block === nil ? null : block;
      var result = arguments.length > 1 ? plain.call(self, pattern, replacement) : plain.call(self, pattern);
      return #{__up_bytes_like(`result`)};
    }
  end

  def gsub(pattern, replacement = nil, &block)
    %x{
      var plain = self.$__opal_gsub;
      plain.$$p = block === nil ? null : block;
      var result = arguments.length > 1 ? plain.call(self, pattern, replacement) : plain.call(self, pattern);
      return #{__up_bytes_like(`result`)};
    }
  end

  # result, marked as bytes when self is bytes and result is a String.
  def __up_bytes_like(result)
    `typeof self === 'string' || result == null || !result.$$is_string` || !RackCompat::Bytes.binary?(self) ? result : RackCompat::Bytes.binary(result)
  end
end

# chomp, delete_prefix and delete_suffix with a String of bytes as the argument (a literal
# of a file in `encoding: binary`, as Rack::Utils is) compared it to a JS string with ===,
# which a String object never equals, and changed nothing: Rack's Forwarded parsing found
# no parameter. The argument is compared by its characters.
class String
  alias __opal_chomp chomp
  alias __opal_delete_prefix delete_prefix
  alias __opal_delete_suffix delete_suffix

  def chomp(separator = nil)
    %x{
      if (arguments.length === 0) return self.$__opal_chomp();
      return self.$__opal_chomp(typeof separator === 'object' && separator !== nil && separator.$$is_string ? separator.toString() : separator);
    }
  end

  def delete_prefix(prefix)
    __opal_delete_prefix(`typeof prefix === 'object' && prefix.$$is_string ? prefix.toString() : prefix`)
  end

  def delete_suffix(suffix)
    __opal_delete_suffix(`typeof suffix === 'object' && suffix.$$is_string ? suffix.toString() : suffix`)
  end
end

# Array#join of Strings where one is bytes gives bytes, as MRI's does for binary parts with
# ASCII text: Opal's joins JS strings, reading bytes above 0x7f as characters
# (Rack::Multipart::Generator joins the parts of a request body, file bytes among them).
class Array
  alias __opal_join join

  def join(separator = nil)
    %x{
      for (var i = 0; i < self.length; i++) {
        var part = self[i];
        if (part != null && typeof part === 'object' && part.$$is_string && part.internal_encoding != null &&
            part.internal_encoding.name === 'ASCII-8BIT') return #{__up_join_bytes(separator)};
      }
      return self.$__opal_join(separator);
    }
  end

  def __up_join_bytes(separator)
    separator = $, if separator.nil?
    parts = flatten.map(&:to_s)
    parts = parts.flat_map { |part| [separator.to_s, part] }.drop(1) if separator && !separator.to_s.empty?
    RackCompat::Bytes.join(parts)
  end
end
