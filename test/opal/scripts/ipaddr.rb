# frozen_string_literal: true

# opal/ipaddr.rb against MRI's ipaddr: what Sinatra and rack-protection use (networks,
# include?, errors) and the text forms.
require "ipaddr"

all4 = IPAddr.new("0.0.0.0/0")
all6 = IPAddr.new("::/0")
p all4, all6, all4.to_s, all6.to_s
p all4.include?("127.0.0.1"), all6.include?("127.0.0.1"), all6.include?("::1"), all4.include?("::1")
net = IPAddr.new("192.168.1.77/24")
p net, net.to_s, net.prefix, net.include?("192.168.1.200"), net.include?(IPAddr.new("192.168.2.1")), net === "192.168.1.1"
p IPAddr.new("10.0.0.0/255.255.0.0"), IPAddr.new("1.2.3.4").mask(16).to_s
p IPAddr.new("2001:db8::1/64"), IPAddr.new("2001:DB8:0:0:8:800:200C:417A").to_s
p IPAddr.new("::ffff:1.2.3.4").to_s, IPAddr.new("::ffff:1.2.3.4").ipv4_mapped?, IPAddr.new("fe80::1%eth0").to_s
p %w[1:2:3:4:5:6:7:8 1:0:0:4:0:0:0:8 0:0:1:: :: ::1 1:: 1:0:0:0:1:0:0:1].map { |a| IPAddr.new(a).to_s }
p IPAddr.new("1.2.3.4") == "1.2.3.4", IPAddr.new("1.2.3.4") == "nonsense", IPAddr.new("1.2.3.4") <=> IPAddr.new("1.2.3.5")
p IPAddr.new("1.2.3.4").ipv4?, IPAddr.new("::1").ipv6?, IPAddr.new("::1").loopback?, IPAddr.new("127.0.0.2").loopback?
p IPAddr.new("10.1.2.3").private?, IPAddr.new("172.20.0.1").private?, IPAddr.new("8.8.8.8").private?, IPAddr.new("fd00::1").private?
p IPAddr.new("1.2.3.4").to_i, IPAddr.new("1.2.3.4").hton.bytes, IPAddr.new("1.2.3.4").eql?(IPAddr.new("1.2.3.4"))
["1.2.3", "localhost", "1.2.3.256", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", "1.2.3.4/33", ""].each do |bad|
  IPAddr.new(bad)
  p [bad, :accepted]
rescue IPAddr::Error => e
  p [bad, e.class.to_s, e.is_a?(ArgumentError)]
end
p IPAddr::InvalidAddressError.ancestors.take(3).map(&:to_s)
