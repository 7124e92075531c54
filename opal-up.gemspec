# frozen_string_literal: true

require_relative "lib/up/version"

Gem::Specification.new do |spec|
  spec.name = "opal-up"
  spec.version = Up::VERSION
  spec.summary = "UP!, a fast and strict Rack server with a native engine"
  spec.description = "A Rack 3.2 server for MRI (up_ruby) whose HTTP/1.1 engine is written in C."
  spec.authors = ["UP! developers"]
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.1"

  spec.files = Dir["lib/**/*.rb", "ext/up/**/*.{c,h,rb}", "opal/**/*.{rb,opalerb}", "node/**/*.js", "exe/*", "README.md"]
  spec.bindir = "exe"
  spec.executables = ["up_ruby", "up_node", "upctl"]
  spec.extensions = ["ext/up/extconf.rb"]
  spec.require_paths = ["lib"]

  spec.add_dependency "opal", "~> 1.8.3" # up_node compiles the app with it
  spec.add_dependency "rack", ">= 3.0", "< 4"
end
