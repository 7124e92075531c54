# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/multipart'
require 'rack/multipart/generator'
require 'rack_compat/bytes'

# Rack::Multipart::Generator (what Rack::MockRequest uses to post files) ends its body with
# `parts.join << "--boundary--\r"`, and puts file bytes into the part by interpolation. Opal
# strings are immutable, and JS concatenation turns binary file bytes back into text, so
# here each part is joined as bytes (RackCompat::Bytes.join). Same body as Rack 3.2.8.
module Rack
  module Multipart
    class Generator
      def dump
        return nil if @first && !multipart?
        return flattened_params unless @first

        parts = flattened_params.map do |name, file|
          if file.respond_to?(:original_filename)
            if file.path
              ::File.open(file.path, 'rb') do |f|
                content_for_tempfile(f, file, name)
              end
            else
              content_for_tempfile(file, file, name)
            end
          else
            content_for_other(file, name)
          end
        end
        RackCompat::Bytes.join(parts + ["--#{MULTIPART_BOUNDARY}--\r"])
      end

      private

      def content_for_tempfile(io, file, name)
        length = ::File.stat(file.path).size if file.path
        filename = "; filename=\"#{Utils.escape_path(file.original_filename)}\""
        head = "--#{MULTIPART_BOUNDARY}\r\ncontent-disposition: form-data; name=\"#{name}\"#{filename}\r\n" \
               "content-type: #{file.content_type}\r\n#{"content-length: #{length}\r\n" if length}\r\n"
        RackCompat::Bytes.join([head, io.read, "\r\n"])
      end
    end
  end
end
