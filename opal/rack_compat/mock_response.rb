# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/mock_response'
require 'rack_compat/bytes'

# Rack::MockResponse#body appends each chunk to a String (buffer << chunk); Opal strings are
# immutable, so the chunks are joined instead (as bytes when one is binary, e.g. gzip), and
# a streaming body writes into a StringIO whose string is read back. Same result as Rack.
module Rack
  class MockResponse
    def body
      return @buffered_body if defined?(@buffered_body)

      begin
        if @body.respond_to?(:each)
          parts = []
          @body.each { |chunk| parts << chunk }
          buffer = RackCompat::Bytes.join(parts)
        else
          io = StringIO.new(+'')
          @body.call(io)
          buffer = io.string
        end
      ensure
        @body.close if @body.respond_to?(:close)
      end

      @buffered_body = buffer
    end
  end
end
